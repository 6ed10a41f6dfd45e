"""``habitat_baselines.env_workers``: default, override, validation."""

import pytest

from habitat_ver.config.compose import get_config
from habitat_ver.config.validate import ConfigError, validate_env_workers
from habitat_ver.system.trainer_watch import DEFAULT_HANG_WARNING_S, hang_warning_seconds


def test_default_and_override_reach_the_trainers():
    assert hang_warning_seconds(get_config("gym/ver_cartpole")) == DEFAULT_HANG_WARNING_S
    config = get_config(
        "gym/appo_cartpole", ["habitat_baselines.env_workers.hang_warning_seconds=2.5"]
    )
    assert hang_warning_seconds(config) == 2.5
    validate_env_workers(config)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_non_positive_or_non_finite_limit_is_refused(value):
    config = get_config(
        "gym/ddppo_cartpole", [f"habitat_baselines.env_workers.hang_warning_seconds={value}"]
    )
    with pytest.raises(
        ConfigError,
        match=r"habitat_baselines\.env_workers\.hang_warning_seconds="
        r".* is not allowed: a finite number of seconds > 0",
    ):
        validate_env_workers(config)
