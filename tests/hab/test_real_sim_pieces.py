"""HAB pieces on the real habitat-sim with its test assets (no ReplicaCAD):
navmesh geodesic distances masking the navigation skill's stop, and the
fridge URDF opening and closing as an articulated object."""

import itertools
import os

import numpy as np
import pytest
import torch
from habitat_baselines.common.tensor_dict import TensorDict
from omegaconf import OmegaConf

from habitat_ver.skills.geodesic import TargetStartGeodesicSensor, geodesic_distances
from habitat_ver.skills.stop_mask import NO_STOP

from .conftest import make_nav_skill

pytestmark = pytest.mark.sim

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# habitat-sim's test assets: ../shared/habitat-sim/data beside the clone (one
# folder higher for a git worktree under wt/), or HABITAT_SIM_TEST_DATA.
CANDIDATES = [
    os.environ.get("HABITAT_SIM_TEST_DATA", ""),
    os.path.join(REPO, "..", "shared", "habitat-sim", "data"),
    os.path.join(REPO, "..", "..", "shared", "habitat-sim", "data"),
]
ASSETS = next((os.path.abspath(c) for c in CANDIDATES if c and os.path.isdir(c)), None)
if ASSETS is None:
    pytestmark = [
        pytest.mark.sim,
        pytest.mark.skip(reason="habitat-sim's test assets not found: set HABITAT_SIM_TEST_DATA"),
    ]


def _simulator(scene: str, physics: bool):
    import habitat_sim

    backend = habitat_sim.SimulatorConfiguration()
    backend.scene_id = scene
    backend.gpu_device_id = -1  # CPU rendering (llvmpipe); no sensors here anyway
    backend.enable_physics = physics
    backend.physics_config_file = os.path.join(ASSETS, "default.physics_config.json")
    agent = habitat_sim.agent.AgentConfiguration()
    agent.sensor_specifications = []
    return habitat_sim.Simulator(habitat_sim.Configuration(backend, [agent]))


@pytest.fixture(scope="module")
def simple_room():
    import habitat_sim

    sim = _simulator(os.path.join(ASSETS, "test_assets/scenes/simple_room.glb"), physics=False)
    settings = habitat_sim.NavMeshSettings()
    settings.set_defaults()
    assert sim.recompute_navmesh(sim.pathfinder, settings)  # simple_room has no navmesh file
    yield sim
    sim.close()


@pytest.fixture(scope="module")
def point_pairs(simple_room):
    """Navigable points (seeded), every pair with its straight and geodesic distance."""
    pathfinder = simple_room.pathfinder
    pathfinder.seed(3)
    points = np.array([pathfinder.get_random_navigable_point() for _ in range(120)])
    pairs = []
    for i, j in itertools.combinations(range(len(points)), 2):
        straight = float(np.linalg.norm(points[i] - points[j]))
        if straight < 3.0:
            geodesic = float(geodesic_distances(pathfinder, points[i], points[j : j + 1])[0])
            pairs.append((points[i], points[j], straight, geodesic))
    return pairs


class StandInRearrangeSim:
    """What the geodesic sensor reads of a RearrangeSim: the real pathfinder,
    the robot's base position and the targets' start positions."""

    class _Agent:
        def __init__(self, base_pos):
            self.articulated_agent = type("Robot", (), {"base_pos": base_pos})()

    def __init__(self, pathfinder, base_pos, target_starts):
        self.pathfinder = pathfinder
        self._agent = self._Agent(base_pos)
        self._starts = np.asarray(target_starts)

    def get_agent_data(self, agent_id):
        return self._agent

    def get_target_objs_start(self):
        return self._starts


def _stop_after_mask(skill, straight, geodesic_obs):
    """The stop value the skill sends for target 0 of one env."""
    observations = TensorDict(
        {
            "obj_start_gps_compass": torch.tensor([[straight, 0.0]]),
            "obj_goal_gps_compass": torch.tensor([[9.0, 0.0]]),
            "ver_obj_start_geodesic": torch.as_tensor(geodesic_obs).view(1, -1),
            "ver_obj_goal_geodesic": torch.tensor([[9.0]]),
            "is_holding": torch.zeros(1, 1),
        }
    )
    skill.on_enter(
        [["any_targets|0", "robot_0"]], [0], None, torch.zeros(1, 1, 4), torch.zeros(1, 11), ["nav"]
    )
    action = skill.act(
        observations,
        torch.zeros(1, 1, 4),
        torch.zeros(1, 11),
        torch.ones(1, 1, dtype=torch.bool),
        [0],
    )
    return float(action.actions[0, 10])  # 11 = 8 (arm, grip) + 2 (base) + stop


def test_geodesic_is_never_shorter_than_the_straight_line(point_pairs):
    assert len(point_pairs) > 100
    for _, _, straight, geodesic in point_pairs:
        assert geodesic >= straight - 1e-3


def test_sensor_reports_the_pathfinder_geodesic(simple_room, point_pairs):
    source, target, _, geodesic = point_pairs[0]
    sim = StandInRearrangeSim(simple_room.pathfinder, source, [target, source])
    task = type("Task", (), {"get_n_targets": lambda self: 2})()
    sensor = TargetStartGeodesicSensor(sim=sim, task=task, config=OmegaConf.create({}))
    assert sensor.observation_space.shape == (2,)
    observed = sensor.get_observation(observations={}, episode=None, task=task)
    np.testing.assert_allclose(observed, [geodesic, 0.0], atol=1e-4)


def test_stop_is_masked_by_geodesic_not_straight_distance(simple_room, point_pairs):
    # Around the room's furniture: closer than 2 m in a straight line, farther on foot.
    around = [p for p in point_pairs if p[2] < 1.95 and p[3] > 2.05]
    near = [p for p in point_pairs if p[3] < 1.9]
    far = [p for p in point_pairs if p[2] > 2.1]
    assert around and near and far
    for source, target, straight, _ in (around[0], near[0], far[0]):
        sim = StandInRearrangeSim(simple_room.pathfinder, source, [target])
        task = type("Task", (), {"get_n_targets": lambda self: 1})()
        sensor = TargetStartGeodesicSensor(sim=sim, task=task, config=OmegaConf.create({}))
        geodesic_obs = sensor.get_observation(observations={}, episode=None, task=task)
        geodesic_stop = _stop_after_mask(make_nav_skill(geodesic=True), straight, geodesic_obs)
        straight_stop = _stop_after_mask(make_nav_skill(geodesic=False), straight, geodesic_obs)
        assert geodesic_stop == (NO_STOP if geodesic_obs[0] > 2.0 else 1.0)
        assert straight_stop == (NO_STOP if straight > 2.0 else 1.0)
    # The "around" pair is where the two differ: only the geodesic mask holds stop back.
    source, target, straight, geodesic = around[0]
    assert straight < 2.0 < geodesic


@pytest.fixture(scope="module")
def fridge():
    sim = _simulator("NONE", physics=True)
    manager = sim.get_articulated_object_manager()
    ao = manager.add_articulated_object_from_urdf(
        os.path.join(ASSETS, "test_assets/urdf/fridge/fridge.urdf"), fixed_base=True
    )
    yield sim, ao
    sim.close()


def _door_link(ao, name):
    return next(i for i in ao.get_link_ids() if ao.get_link_name(i) == name)


def test_fridge_has_two_revolute_doors_with_the_urdf_limits(fridge):
    _, ao = fridge
    assert ao.num_links == 3
    lower, upper = ao.joint_position_limits
    # fridge.urdf: bottom_door_hinge 0..2.5 rad, top_door_hinge 0..2.3 rad.
    np.testing.assert_allclose(lower, [0.0, 0.0])
    np.testing.assert_allclose(upper, [2.5, 2.3], atol=1e-6)


def test_fridge_door_set_open_stays_open_under_physics(fridge):
    sim, ao = fridge
    ao.joint_positions = [1.5, 0.0]
    sim.step_physics(1.0)
    np.testing.assert_allclose(ao.joint_positions, [1.5, 0.0], atol=1e-3)
    ao.joint_positions = [0.0, 0.0]
    sim.step_physics(0.5)
    np.testing.assert_allclose(ao.joint_positions, [0.0, 0.0], atol=1e-3)


def test_fridge_door_motor_opens_and_closes_it(fridge):
    import habitat_sim
    import magnum as mn

    sim, ao = fridge
    link = _door_link(ao, "bottom_door")
    motor = next(m for m, lk in ao.existing_joint_motor_ids.items() if lk == link)
    dof = ao.get_link_joint_pos_offset(link)
    ao.joint_positions = [0.0, 0.0]
    closed_pose = ao.get_link_scene_node(link).absolute_transformation().rotation()
    for target in (1.2, 0.0):
        # JointMotorSettings(position_target, position_gain, velocity_target,
        # velocity_gain, max_impulse): habitat-lab's gains for articulated objects.
        ao.update_joint_motor(
            motor, habitat_sim.physics.JointMotorSettings(target, 0.3, 0.0, 0.1, 10.0)
        )
        for _ in range(180):  # 3 s at habitat-lab's 60 Hz control rate
            sim.step_physics(1.0 / 60)
        assert abs(ao.joint_positions[dof] - target) < 0.01
        assert abs(ao.joint_positions[1 - dof]) < 1e-3  # the other door did not move
        pose = ao.get_link_scene_node(link).absolute_transformation().rotation()
        turned = 2 * float(
            mn.math.half_angle(
                mn.Quaternion.from_matrix(closed_pose), mn.Quaternion.from_matrix(pose)
            )
        )
        # The door's mesh turned about its hinge by the joint angle.
        assert abs(turned - target) < 0.01
