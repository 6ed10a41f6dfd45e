"""The error every config check raises: one line naming key, value and what is allowed.

Its own module so that the checks spread over ``config/`` (validate, embedded
envs, HAB data, stored and upstream configs) import it without importing
each other.
"""

from typing import Any


class ConfigError(ValueError):
    """A config value that habitat-ver cannot run with."""


def check(condition: bool, key: str, value: Any, allowed: str) -> None:
    """Raise ``ConfigError("key=value is not allowed: allowed")`` unless ``condition``."""
    if not condition:
        raise ConfigError(f"{key}={value!r} is not allowed: {allowed}")
