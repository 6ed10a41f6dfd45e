"""Settings of the embedded environments (ViZDoom, gym) and stragglers.

Provisional minimal schema; the embedded-environments work fills in
validation and documentation.
"""

from dataclasses import dataclass, field
from typing import Any, List


@dataclass
class StragglerConfig:
    """Injected per-step delays (waits, not CPU burn)."""

    # Wrap every env in the straggler wrapper.
    enabled: bool = False
    # Per-env speed factor, drawn once, log-uniform in [min, max].
    speed_factor_min: float = 1.0
    speed_factor_max: float = 4.0
    # Wait added to every step before the factor, seconds.
    base_step_seconds: float = 0.002
    # Per-step relative jitter (sigma of a log-normal multiplier).
    jitter: float = 0.25
    # Probability that a step is a long one.
    long_step_prob: float = 0.002
    # Extra wait of a long step, seconds.
    long_step_seconds: float = 0.1
    # Global env indices made slow_factor times slower, deterministically.
    slow_env_indices: List[int] = field(default_factory=list)
    # Multiplier of the envs in slow_env_indices.
    slow_factor: float = 10.0
    # Seed of the delay draws (added to the env index).
    seed: int = 0


@dataclass
class EmbeddedEnvConfig:
    """What the env builder applies on top of the gym id."""

    # Observation size [height, width] in pixels of image environments.
    resolution: List[int] = field(default_factory=lambda: [72, 96])
    # Simulator ticks per agent step (ViZDoom).
    frame_skip: int = 4
    # Gym ids dealt out across envs (env i runs scenarios[i % len]); empty =
    # every env runs habitat.env_task_gym_id.
    scenarios: List[str] = field(default_factory=list)
    # Straggler wrapper settings.
    straggler: StragglerConfig = field(default_factory=StragglerConfig)


def validate_embedded_env(cfg: Any) -> None:
    """Cross-field checks (see the embedded-environments docs)."""
