"""validate_embedded_env: defaults pass, each bad value is named."""

import re

import pytest
from omegaconf import OmegaConf

import habitat_ver  # noqa: F401
from habitat_ver.config.embedded_env import (
    EmbeddedEnvConfig,
    StragglerConfig,
    validate_embedded_env,
)
from habitat_ver.config.validate import ConfigError


def _section(**overrides):
    cfg = OmegaConf.structured(EmbeddedEnvConfig)
    for key, value in overrides.items():
        OmegaConf.update(cfg, key, value, merge=False)
    return cfg


def test_defaults_are_valid_as_dataclass_and_dictconfig():
    validate_embedded_env(EmbeddedEnvConfig())
    validate_embedded_env(_section())
    straggler = StragglerConfig()
    assert straggler.enabled is False
    assert straggler.speed_factor_min <= straggler.speed_factor_max
    assert EmbeddedEnvConfig().resolution == [72, 96]
    assert EmbeddedEnvConfig().frame_skip == 4
    assert EmbeddedEnvConfig().scenarios == []


def test_a_valid_heterogeneous_setting_passes():
    validate_embedded_env(
        _section(
            **{
                "scenarios": ["habitat_ver/DoomMyWayHome-v0", "CartPole-v1"],
                "straggler.enabled": True,
                "straggler.speed_factor_min": 2.0,
                "straggler.speed_factor_max": 2.0,
                "straggler.long_step_prob": 1.0,
                "straggler.jitter": 0.0,
                "straggler.slow_env_indices": [0, 3],
            }
        )
    )


# message: a regex of the text after "<key>=": the value, then what is allowed.
@pytest.mark.parametrize(
    "key, value, message",
    [
        ("resolution", [72], r"\[72\] .*two positive integers"),
        ("resolution", [72, 0], r"\[72, 0\] .*two positive integers"),
        ("resolution", [72, 96, 3], r"\[72, 96, 3\]"),
        ("frame_skip", 0, r"0 .*>= 1"),
        ("scenarios", [""], r"\[''\] .*non-empty gym ids"),
        ("straggler.speed_factor_min", 0.0, r"0.0 .*> 0"),
        ("straggler.speed_factor_max", 0.5, r"0.5 .*>= straggler.speed_factor_min \(1.0\)"),
        ("straggler.base_step_seconds", -0.001, r"-0.001 .*>= 0"),
        ("straggler.long_step_seconds", -1.0, r"-1.0 .*>= 0"),
        ("straggler.jitter", -0.1, r"-0.1 .*>= 0"),
        ("straggler.long_step_prob", 1.5, r"1.5 .*\[0, 1\]"),
        ("straggler.long_step_prob", -0.1, r"-0.1 .*\[0, 1\]"),
        ("straggler.slow_factor", 0.5, r"0.5 .*>= 1"),
        ("straggler.slow_env_indices", [2, -1], r"\[2, -1\] .*indices >= 0"),
        ("straggler.seed", -3, r"-3 .*integer >= 0"),
    ],
)
def test_bad_values_are_named(key, value, message):
    prefix = re.escape(f"habitat_baselines.embedded_env.{key}=")
    with pytest.raises(ConfigError, match=prefix + message):
        validate_embedded_env(_section(**{key: value}))


def test_validate_runs_it_on_a_run_config():
    from habitat_ver.config.compose import get_config
    from habitat_ver.config.validate import validate

    config = get_config(
        "gym/ddppo_cartpole", ["habitat_baselines.embedded_env.straggler.long_step_prob=2.0"]
    )
    with pytest.raises(ConfigError, match="long_step_prob=2.0"):
        validate(config)


def _gym_config(gym_id, **gym_kwargs):
    from habitat_ver.config.compose import get_config

    overrides = [f"habitat.env_task_gym_id={gym_id}"]
    overrides += [
        f"+habitat_baselines.embedded_env.gym_kwargs.{k}={v}" for k, v in gym_kwargs.items()
    ]
    return get_config("gym/ddppo_cartpole", overrides)


def test_gym_kwargs_the_constructor_takes_pass():
    from habitat_ver.config.validate import validate

    validate(_gym_config("habitat_ver/DoomMyWayHome-v0", episode_timeout=40))


@pytest.mark.parametrize(
    "gym_id, kwargs, message",
    [
        # CartPoleEnv() takes no arguments at all.
        ("CartPole-v1", {"size": 5}, r"gym_kwargs.size=5 .*CartPole-v1's constructor .* none"),
        (
            "habitat_ver/DoomMyWayHome-v0",
            {"episode_timeot": 40},
            r"gym_kwargs.episode_timeot=40 .*takes scenario, resolution, frame_skip, "
            r"episode_timeout",
        ),
        (
            "habitat_ver/DoomMyWayHome-v0",
            {"frame_skip": 2},
            r"gym_kwargs.frame_skip=2 .*frame_skip instead",
        ),
        (
            "habitat_ver/DoomMyWayHome-v0",
            {"scenario": "cig"},
            r"gym_kwargs.scenario='cig' .*the gym id picks it",
        ),
    ],
)
def test_gym_kwargs_the_constructor_lacks_are_named(gym_id, kwargs, message):
    from habitat_ver.config.validate import validate

    with pytest.raises(ConfigError, match="habitat_baselines.embedded_env." + message):
        validate(_gym_config(gym_id, **kwargs))
