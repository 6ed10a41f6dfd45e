"""appo's rollout-worker layout: ``auto`` by default, settable on upstream configs.

Issue 29: with 2 workers by default, the 16 wait-bound envs of benchmark (c)
ran at 44 steps/s (each worker waits for its 8 envs in turn), and upstream's
1-env config with ``trainer_name=appo`` was refused (2 workers for 1 env).
"""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from habitat_ver.trainers.appo_settings import AppoConfig
from habitat_ver.config.compose import get_config
from habitat_ver.config.validate import ConfigError
from habitat_ver.envs.pools import resolve_layout
from habitat_ver.trainers.appo import validate_appo
from habitat_ver.run import get_trainer_class

UPSTREAM_CONFIGS = (Path(__file__).parents[1] / "fixtures" / "upstream_configs").resolve()


@pytest.mark.parametrize(
    "envs, workers, groups, resolved",
    [
        (16, "auto", "auto", (16, 1)),  # benchmark (c): one worker per env
        (1, "auto", "auto", (1, 1)),  # upstream's 1-env example
        (8, 2, "auto", (2, 2)),  # 4 envs per worker: double-buffered, 2 x 2
        (6, 2, "auto", (2, 1)),  # 3 envs per worker: odd, one group
        (8, 4, "AUTO", (4, 2)),  # 2 per worker, any case
        (8, 2, 2, (2, 2)),  # set by hand: as given
        (4, 3, "auto", (3, 1)),  # not a divisor: left for validation to refuse
    ],
)
def test_auto_resolves_from_the_env_count(envs, workers, groups, resolved):
    assert resolve_layout(envs, workers, groups) == resolved


def test_the_defaults_are_auto():
    defaults = OmegaConf.structured(AppoConfig)
    assert (defaults.num_rollout_workers, defaults.num_env_groups) == ("auto", "auto")


def _upstream(envs, *extra):
    config = get_config(
        "pointnav/ddppo_pointnav",
        [
            "habitat_baselines.trainer_name=appo",
            f"habitat_baselines.num_environments={envs}",
            *extra,
        ],
        config_dir=UPSTREAM_CONFIGS,
    )
    return get_trainer_class("appo").adapt_config(config)


def test_upstreams_one_env_config_runs_with_only_the_trainer_changed():
    # As upstream's 1-env example (its PPO needs a minibatch per env at least).
    config = _upstream(1, "habitat_baselines.rl.ppo.num_mini_batch=1")
    validate_appo(config)  # refused before: num_rollout_workers=2 for 1 env
    appo = config.habitat_baselines.rl.appo
    assert resolve_layout(1, appo.num_rollout_workers, appo.num_env_groups) == (1, 1)


def test_appo_keys_added_to_an_upstream_config_are_kept():
    config = _upstream(
        4,
        "+habitat_baselines.rl.appo.num_rollout_workers=2",
        "+habitat_baselines.rl.appo.vtrace_c_clip=0.9",
    )
    validate_appo(config)  # no "not a key of RLConfig"
    appo = config.habitat_baselines.rl.appo
    assert (appo.num_rollout_workers, appo.num_env_groups, appo.vtrace_c_clip) == (2, "auto", 0.9)
    assert appo.max_policy_lag == AppoConfig.max_policy_lag  # the rest at its defaults


def test_a_misspelt_appo_key_on_an_upstream_config_is_named():
    with pytest.raises(ConfigError, match=r"rl\.appo\.num_rolout_workers is not allowed: Key"):
        _upstream(4, "+habitat_baselines.rl.appo.num_rolout_workers=2")


@pytest.mark.parametrize(
    "key, value, match",
    [
        ("num_rollout_workers", 3, r"num_rollout_workers=3 .*'auto' or a positive divisor"),
        ("num_rollout_workers", "two", r"num_rollout_workers='two' .*'auto' or a positive"),
        ("num_env_groups", 3, r"num_env_groups=3 .*divisor of the envs per rollout worker \(1\)"),
    ],
)
def test_bad_layouts_are_named(key, value, match):
    config = _upstream(4, f"+habitat_baselines.rl.appo.{key}={value}")
    with pytest.raises(ConfigError, match=match):
        validate_appo(config)
