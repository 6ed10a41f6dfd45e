"""Provisional env builder: habitat's own gym construction (see factory.py)."""

from typing import Any

from habitat.gym import make_gym_from_config


def build_env(config: Any, env_index: int) -> Any:
    """Build env ``env_index`` of the run in a worker process."""
    return make_gym_from_config(config)
