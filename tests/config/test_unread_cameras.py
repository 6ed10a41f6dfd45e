"""Only the cameras the policy reads are rendered (habitat_ver/config/unread_cameras.py)."""

import pytest
from habitat.config import read_write
from habitat.config.default_structured_configs import HeadRGBSensorConfig

from habitat_ver.config.compose import get_config
from habitat_ver.config.hab_validate import observation_space_of
from habitat_ver.config.unread_cameras import read_cameras, without_unread_cameras

PAPER = ["hab_profile=paper"]
STATE_ONLY = "habitat_baselines.ver_policy.visual_keys=[]"


def test_a_state_only_policy_gets_no_camera_and_no_concurrent_rendering():
    config = get_config("rearrange/ver_pick_nonav", [*PAPER, STATE_ONLY])
    assert list(config.habitat.simulator.agents.main_agent.sim_sensors) == ["head_depth_sensor"]
    trimmed = without_unread_cameras(config)
    assert dict(trimmed.habitat.simulator.agents.main_agent.sim_sensors) == {}
    assert not trimmed.habitat.simulator.concur_render
    assert list(trimmed.habitat.gym.obs_keys) == [
        "obj_start_sensor",
        "joint",
        "is_holding",
        "relative_resting_position",
    ]
    assert sorted(observation_space_of(trimmed).spaces) == sorted(trimmed.habitat.gym.obs_keys)
    # The video camera is added by the evaluator when a video is asked for.
    assert "third_rgb_sensor" in trimmed.habitat_baselines.eval.extra_sim_sensors
    # The run's config is a copy: the composed one is unchanged.
    assert config.habitat.simulator.concur_render
    assert "head_depth" in config.habitat.gym.obs_keys


@pytest.mark.parametrize(
    "overrides",
    [
        [],  # visual_keys unset: every image observation is read
        ["habitat_baselines.ver_policy.visual_keys=[head_depth]"],
    ],
)
def test_a_policy_that_reads_the_camera_keeps_it(overrides):
    config = get_config("rearrange/ver_pick", [*PAPER, *overrides])
    assert without_unread_cameras(config) is config


def test_one_camera_of_two_is_dropped_and_concurrent_rendering_stays():
    config = get_config(
        "rearrange/ver_pick", [*PAPER, "habitat_baselines.ver_policy.visual_keys=[head_depth]"]
    )
    with read_write(config):
        sensors = config.habitat.simulator.agents.main_agent.sim_sensors
        sensors.head_rgb_sensor = HeadRGBSensorConfig()
        config.habitat.gym.obs_keys.append("head_rgb")
    trimmed = without_unread_cameras(config)
    assert list(trimmed.habitat.simulator.agents.main_agent.sim_sensors) == ["head_depth_sensor"]
    assert "head_rgb" not in trimmed.habitat.gym.obs_keys
    assert trimmed.habitat.simulator.concur_render


def test_policies_that_do_not_declare_their_inputs_are_left_alone():
    tidy = get_config("hab/tidy_house")  # the hierarchical TP-SRL policy
    assert read_cameras(tidy) is None
    assert without_unread_cameras(tidy) is tidy
