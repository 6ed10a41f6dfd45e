"""Every hab/* and rearrange/* config films its evaluations with a camera of its own."""

import pytest
from omegaconf import OmegaConf

from habitat_ver.config.compose import config_names, get_config

VIDEO_CONFIGS = [n for n in config_names() if n.split("/")[0] in ("hab", "rearrange")]


def test_the_configs_are_found():
    assert "hab/tidy_house_oracle" in VIDEO_CONFIGS and "rearrange/ddppo_pick" in VIDEO_CONFIGS
    # 10 skills, 6 scenarios, 3 oracle runs, the learned pick and the learned open skills.
    assert len(VIDEO_CONFIGS) == 21


@pytest.mark.parametrize("name", VIDEO_CONFIGS)
def test_a_third_person_video_camera_for_the_video_only(name):
    config = get_config(name)
    baselines = config.habitat_baselines
    assert baselines.evaluator._target_ == ("habitat_ver.trainers.video_evaluator.VideoEvaluator")
    (camera,) = baselines.eval.extra_sim_sensors.values()
    # The Fetch's "third" camera (habitat-lab moves sensors named third* with the robot).
    assert camera.uuid == "third_rgb" and camera.type == "HabitatSimRGBSensor"
    assert min(camera.width, camera.height) >= 256
    # Not among the sensors or observations the policy is built from: upstream
    # adds it only when a video is asked for.
    sensors = OmegaConf.to_container(config.habitat.simulator.agents, resolve=False)
    assert "third_rgb" not in str(sensors)
    assert "third_rgb" not in list(config.habitat.gym.obs_keys or [])
    assert list(baselines.eval.video_option) == []
