"""The ``ver_markers`` sensor's rows and the open/close skill's inputs built from
them, without a simulator (tests/hab/test_hab_real.py checks them against
habitat-lab's own marker sensors on the real one)."""

import gym.spaces as spaces
import numpy as np
import pytest
import torch
from habitat_baselines.common.tensor_dict import TensorDict
from omegaconf import OmegaConf

from habitat_ver.skills import markers
from habitat_ver.skills.art_obj import ArtObjArgs, VERArtObjSkill, markers_of


class _Marker:
    def __init__(self, position, joint):
        self.position, self.joint = np.asarray(position, dtype=np.float32), joint

    def get_current_position(self):
        return self.position

    def get_targ_js(self):
        return self.joint


class _Shift:
    """An end effector's inverse transform that only translates."""

    def __init__(self, by):
        self.by = np.asarray(by, dtype=np.float32)

    def transform_point(self, point):
        return point + self.by


def test_rows_are_each_marker_in_the_end_effectors_frame_with_its_joint_in_the_names_order():
    present = {
        "a": _Marker([1, 2, 3], 0.25),
        "b": _Marker([0, 0, 0], 0.5),
        "c": _Marker([9, 9, 9], 1),
    }
    rows = markers.marker_rows(["b", "a"], present, _Shift([-1, 0, 1]))
    assert rows.dtype == np.float32 and rows.shape == (2, markers.ROW)
    np.testing.assert_allclose(rows, [[-1, 0, 1, 0.5], [0, 2, 4, 0.25]])


def test_a_marker_missing_from_the_episode_is_named_with_those_there_are():
    with pytest.raises(markers.MissingMarkerError) as error:
        markers.marker_rows(["a", "z"], {"a": _Marker([0, 0, 0], 0)}, _Shift([0, 0, 0]))
    message = str(error.value)
    assert "markers ['z'] are not in the episode; it has ['a']" in message
    assert "habitat.task.lab_sensors.ver_markers_sensor.markers" in message


def test_the_sensor_space_has_a_row_per_configured_marker_and_hab_markers_by_default():
    config = OmegaConf.structured(markers.VERMarkersSensorConfig)
    assert list(config.markers) == list(markers.HAB_MARKERS)
    sensor = markers.VERMarkersSensor(sim=None, config=config, task=None)
    assert sensor.uuid == "ver_markers"
    assert sensor.observation_space.shape == (markers.ROW * len(markers.HAB_MARKERS),)
    config.markers = []
    with pytest.raises(ValueError, match=r"ver_markers_sensor\.markers is empty"):
        markers.VERMarkersSensor(sim=None, config=config, task=None)


BOX = spaces.Box(-1.0, 1.0, (7,), np.float32)
TRAINED_ON = ["marker_rel_pos", "marker_js_no_vel", "joint"]
SKILL = OmegaConf.create({"skill_name": "VERArtObjSkill", "obs_skill_inputs": []})


def test_the_handle_inputs_are_built_from_the_markers_where_the_evaluation_lacks_them():
    evaluation = spaces.Dict({"joint": BOX, "ver_markers": spaces.Box(-1, 1, (20,), np.float32)})
    seen = VERArtObjSkill.skill_observation_space(SKILL, evaluation, TRAINED_ON)
    assert {k: s.shape for k, s in seen.spaces.items()} == {
        "marker_rel_pos": (3,),
        "marker_js_no_vel": (1,),
        "joint": (7,),
    }
    # The skill's own task produces them: read as they are.
    own = spaces.Dict({"joint": BOX, "marker_rel_pos": BOX, "marker_js_no_vel": BOX})
    seen = VERArtObjSkill.skill_observation_space(SKILL, own, TRAINED_ON)
    assert seen.spaces["marker_rel_pos"] is BOX


def test_without_the_markers_sensor_the_skill_says_which_to_add():
    with pytest.raises(ValueError) as error:
        VERArtObjSkill.skill_observation_space(SKILL, spaces.Dict({"joint": BOX}), TRAINED_ON)
    assert "reads ['marker_rel_pos', 'marker_js_no_vel']" in str(error.value)
    assert "'ver_markers' to habitat.gym.obs_keys" in str(error.value)


def _skill(names):
    skill = VERArtObjSkill.__new__(VERArtObjSkill)
    skill._config = SKILL
    skill._cur_skill_step = torch.zeros(3)
    skill._should_keep_hold_state = False
    skill._filtered_obs_space = spaces.Dict(
        {"marker_rel_pos": BOX, "marker_js_no_vel": BOX, "joint": BOX}
    )
    skill._from_row = ["marker_rel_pos", "marker_js_no_vel"]
    skill._marker_names = names
    skill._cur_skill_args = [None, None, None]
    return skill


def test_each_env_gets_the_row_of_the_marker_its_plan_step_names():
    skill = _skill(["m0", "m1", "m2"])
    skill._cur_skill_args[0] = skill._parse_skill_arg(
        "open_cab", ["m2", "bowl_target|0", "robot_0"]
    )
    skill._cur_skill_args[2] = skill._parse_skill_arg(
        "open_fridge", ["m0", "fruit_target|1", "robot_0"]
    )
    assert skill._cur_skill_args[2] == ArtObjArgs("m0", 1)
    assert skill._get_multi_sensor_index([0, 2]) == [0, 1]
    rows = torch.arange(2 * 3 * 4, dtype=torch.float32).view(2, 12)
    joint = torch.ones(2, 7)
    # The batch holds envs 0 and 2, in that order.
    seen = skill._get_filtered_obs(TensorDict({"ver_markers": rows, "joint": joint}), [0, 2])
    assert seen["marker_rel_pos"].tolist() == [[8, 9, 10], [12, 13, 14]]
    assert seen["marker_js_no_vel"].tolist() == [[11], [15]]
    assert seen["joint"] is joint and "ver_markers" not in seen.keys()
    assert skill.required_obs_keys == ["joint", "ver_markers"]


def test_a_plan_step_naming_a_marker_the_sensor_lacks_is_refused():
    skill = _skill(["m0"])
    with pytest.raises(ValueError, match=r"marker 'm9' is not among the ver_markers sensor's"):
        skill._parse_skill_arg("open_cab", ["m9", "bowl_target|0", "robot_0"])


def test_the_skill_reads_the_marker_order_of_the_evaluations_sensor():
    config = OmegaConf.create(
        {
            "habitat": {
                "task": {"lab_sensors": {"x": {"type": "VERMarkersSensor", "markers": ["b", "a"]}}}
            }
        }
    )
    assert markers_of(config) == ["b", "a"]
    config.habitat.task.lab_sensors = {}
    assert markers_of(config) == []


def _entering_skill(num_envs):
    skill = _skill(["m0"])
    skill._config = OmegaConf.create(
        {"skill_name": "VERArtObjSkill", "start_zone_radius": 0.3, "at_resting_threshold": 0.15}
    )
    skill._batch_size = num_envs
    skill._cur_skill_step = torch.zeros(num_envs)
    skill._raw_skill_args = [None] * num_envs
    skill._cur_skill_args = [None] * num_envs
    skill._did_want_done = torch.zeros(num_envs)
    skill._start_rest = torch.zeros(num_envs, 3)
    skill._left_start = torch.zeros(num_envs, dtype=torch.bool)
    return skill


def _obs(rest, holding=None):
    rest = torch.tensor([[x, 0.0, 0.0] for x in rest])
    held = torch.tensor(holding or [0.0] * len(rest)).view(-1, 1)
    return TensorDict({"relative_resting_position": rest, "is_holding": held})


def _enter(skill, rows, rest):
    hidden, prev = torch.zeros(len(rest), 1, 4), torch.zeros(len(rest), 11)
    args = [["m0", "bowl_target|0", "robot_0"]] * len(rows)
    skill.on_enter(args, rows, _obs(rest), hidden, prev, ["open_cab"] * len(rows))


def _done(skill, rows, rest, holding=None):
    return skill._is_skill_done(_obs(rest, holding), None, None, None, rows).tolist()


def test_each_env_is_done_by_its_own_start_zone_when_envs_enter_at_different_steps():
    from habitat_ver.skills.hierarchical_policy import compact_rows

    skill = _entering_skill(2)
    _enter(skill, [0], [0.0, 9.0])  # env 0 enters at rest
    assert _done(skill, [0], [0.5]) == [False]  # left its start zone, not back at rest
    _enter(skill, [1], [0.1, 0.4])  # env 1 enters; env 0 is nearly back
    # Env 0 left its zone before env 1 entered and is back: done.  (Upstream
    # cleared env 0's flag and took 0.1 as its start when env 1 entered.)
    # Env 1 has not left its own zone.
    assert _done(skill, [0, 1], [0.05, 0.3]) == [True, False]
    assert _done(skill, [0], [0.05], holding=[1.0]) == [False]  # holding: not done
    # Env 0 is paused: env 1's state moves up to the first row.
    compact_rows(skill, [1], 2)
    assert skill._start_rest[0].tolist() == pytest.approx([0.4, 0, 0])
    assert _done(skill, [0], [0.05]) == [True]  # moved 0.35 from its start, at rest
