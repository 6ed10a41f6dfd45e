"""Our oracle navigation's choice of where to stand (habitat_ver/sims/oracle_nav.py).

Needs habitat-lab's rearrange actions, which import the real habitat-sim.  The
scenario runs are in tests/hab/test_hab_real.py (the oracle solves an episode).
"""

import numpy as np
import pytest

pytestmark = pytest.mark.sim


class _Placer:
    """Stands in for habitat-lab's ``place_agent_at_dist_from_pos``: records
    each call, and fails for the distances in ``failing``."""

    def __init__(self, failing):
        self.failing = set(failing)
        self.calls = []

    def __call__(self, target, noise, distance, sim, attempts, filter_colliding, agent):
        self.calls.append((distance, attempts, filter_colliding))
        return np.array([distance, 0.0, 0.0]), 0.5, distance in self.failing


def test_a_free_sample_is_kept_as_habitat_lab_keeps_it():
    from habitat_ver.sims.oracle_nav import stand_near

    placer = _Placer(failing=())
    start, angle, failed = stand_near(np.zeros(3), 1.5, None, 200, None, place=placer)
    assert placer.calls == [(1.5, 200, True)]
    assert start[0] == 1.5 and angle == 0.5 and not failed


def test_no_free_sample_drives_to_the_closest_navmesh_point():
    # habitat-lab returns the robot's own pose then: the skill would end there.
    from habitat_ver.sims.oracle_nav import CLOSEST_POINT, stand_near

    placer = _Placer(failing=(1.5,))
    start, _, failed = stand_near(np.zeros(3), 1.5, None, 200, None, place=placer)
    assert placer.calls == [(1.5, 200, True), (CLOSEST_POINT, 200, True)]
    assert start[0] == CLOSEST_POINT and not failed


def test_asking_for_the_closest_point_is_one_call():
    from habitat_ver.sims.oracle_nav import CLOSEST_POINT, stand_near

    placer = _Placer(failing=(CLOSEST_POINT,))
    _, _, failed = stand_near(np.zeros(3), CLOSEST_POINT, None, 200, None, place=placer)
    assert placer.calls == [(CLOSEST_POINT, 200, True)] and failed


class _Sampler:
    """habitat-lab's sampler one attempt at a time: each call returns the next
    of ``distances`` (horizontal, along z) as a free point."""

    def __init__(self, distances):
        self.distances = list(distances)
        self.calls = []

    def __call__(self, target, noise, distance, sim, attempts, filter_colliding, agent):
        self.calls.append((distance, attempts))
        if distance == -1.0:
            return np.array([0.0, 0.0, 0.3]), 0.0, False
        return target + np.array([0.0, 5.0, self.distances.pop(0)]), 0.0, False


def test_a_minimum_distance_keeps_the_first_sample_that_far():
    from habitat_ver.sims.oracle_nav import stand_near

    sampler = _Sampler([0.4, 0.9, 1.2, 1.4])
    target = np.array([1.0, 0.5, 2.0])
    start, _, failed = stand_near(target, 1.5, None, 200, None, 1.0, place=sampler)
    # one attempt per call, so each sample is seen; the height (y) is not counted
    assert sampler.calls == [(1.5, 1)] * 3
    assert start[2] - target[2] == pytest.approx(1.2) and not failed


def test_no_sample_that_far_takes_any_free_sample():
    from habitat_ver.sims.oracle_nav import stand_near

    sampler = _Sampler([0.4, 0.5, 0.6, 0.7])
    start, _, failed = stand_near(np.zeros(3), 1.5, None, 3, None, 1.0, place=sampler)
    assert sampler.calls == [(1.5, 1)] * 3 + [(1.5, 3)]
    assert start[2] == 0.7 and not failed


class _Config(dict):
    def __getattr__(self, key):
        return self[key]


@pytest.mark.parametrize("low, high", [(-0.5, 1.5), (1.5, 1.5), (2.0, 1.5)])
def test_a_minimum_outside_zero_to_the_maximum_is_refused_by_name(low, high):
    from habitat_ver.sims.oracle_nav import HabVerOracleNavAction

    action = HabVerOracleNavAction.__new__(HabVerOracleNavAction)
    action._config = _Config(spawn_min_dist_to_obj=low, spawn_max_dist_to_obj=high)
    with pytest.raises(ValueError, match=rf"spawn_min_dist_to_obj={low}: .*\({high}\)"):
        action._min_distance()


def test_habitat_labs_config_without_the_key_means_no_minimum():
    from habitat_ver.sims.oracle_nav import CLOSEST_POINT, HabVerOracleNavAction

    action = HabVerOracleNavAction.__new__(HabVerOracleNavAction)
    action._config = _Config(spawn_max_dist_to_obj=CLOSEST_POINT)
    assert action._min_distance() == 0.0


def test_a_config_naming_the_action_registers_it_in_the_env_worker():
    from habitat.core.registry import registry
    from omegaconf import OmegaConf

    from habitat_ver.envs.builder import register_our_habitat_classes

    config = OmegaConf.create(
        {
            "habitat": {
                "simulator": {"type": "Sim-v0"},
                "task": {"actions": {"oracle_nav_action": {"type": "HabVerOracleNavAction"}}},
            }
        }
    )
    register_our_habitat_classes(config)
    action = registry.get_task_action("HabVerOracleNavAction")
    from habitat.tasks.rearrange.actions.oracle_nav_action import OracleNavAction

    assert action is not None and issubclass(action, OracleNavAction)
