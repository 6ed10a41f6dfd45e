"""Settings of the embedded environments (ViZDoom, gym) and of stragglers.

The section lives at ``habitat_baselines.embedded_env``; the env builder
(:func:`habitat_ver.envs.builder.build_env`) applies it on top of
``habitat.env_task_gym_id``.  The straggler model is documented in
``habitat_ver/envs/README.md`` and implemented in
:mod:`habitat_ver.envs.straggler`.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List

from omegaconf import DictConfig, OmegaConf

from habitat_ver.config.errors import check

_PREFIX = "habitat_baselines.embedded_env"

# The habitat.env_task that reaches gym ids, ours and any other (habitat's
# GymRegistryEnv); every other task is a habitat task.
GYM_ENV_TASK = "GymRegistryEnv"

# Our ViZDoom gym ids (registered by habitat_ver.envs) -> DoomEnv scenario.
DOOM_IDS = {
    "habitat_ver/DoomMyWayHome-v0": "my_way_home",
    "habitat_ver/DoomHealthGathering-v0": "health_gathering",
    "habitat_ver/DoomDefendTheCenter-v0": "defend_the_center",
    "habitat_ver/DoomDeathmatchBots-v0": "deathmatch_bots",
}
# Arguments of our Doom ids that embedded_env.gym_kwargs may not set: where
# each one comes from instead.
DOOM_KWARGS_SET_ELSEWHERE = {
    "scenario": "the gym id picks it (embedded_env.scenarios mixes ids)",
    "resolution": f"set {_PREFIX}.resolution instead",
    "frame_skip": f"set {_PREFIX}.frame_skip instead",
}


@dataclass
class StragglerConfig:
    """Injected per-step delays, spent waiting (``time.sleep``), not burning CPU.

    The wait after a step of env ``i`` is
    ``speed_factor_i * (base_step_seconds * J + long_step_seconds * L)`` with
    ``J`` log-normal of mean 1 and ``L`` Bernoulli(``long_step_prob``).
    """

    # Wrap every env, embedded or habitat-sim, in the straggler wrapper (False = no delays).
    enabled: bool = False
    # Lower bound of the per-env speed factor, drawn once, log-uniform; unitless.
    speed_factor_min: float = 1.0
    # Upper bound of the per-env speed factor; unitless, >= speed_factor_min.
    speed_factor_max: float = 4.0
    # Wait added to every step before the speed factor, seconds.
    base_step_seconds: float = 0.002
    # Per-step jitter: sigma of a mean-1 log-normal multiplier of the base wait; unitless.
    jitter: float = 0.25
    # Probability that a step is a long one, in [0, 1] per step.
    long_step_prob: float = 0.002
    # Extra wait of a long step before the speed factor, seconds.
    long_step_seconds: float = 0.1
    # Global env indices whose speed factor is multiplied by slow_factor.
    slow_env_indices: List[int] = field(default_factory=list)
    # Multiplier of the speed factor of the envs in slow_env_indices; unitless, >= 1.
    slow_factor: float = 10.0
    # Seed of the delay draws; env i draws from the stream (seed, i); integer >= 0.
    seed: int = 0


@dataclass
class EmbeddedEnvConfig:
    """What the env builder applies on top of the gym id."""

    # Observation size [height, width] of image environments, pixels.
    resolution: List[int] = field(default_factory=lambda: [72, 96])
    # Simulator ticks per agent step (ViZDoom; 35 ticks = 1 game second), ticks.
    frame_skip: int = 4
    # Gym ids dealt out across envs (env i runs scenarios[i % len]); empty =
    # every env runs habitat.env_task_gym_id.
    scenarios: List[str] = field(default_factory=list)
    # Keyword arguments for the constructor of every gym id the run builds
    # (env_task_gym_id, or each of scenarios), on top of its registered ones;
    # our Doom ids take resolution and frame_skip from the keys above instead.
    gym_kwargs: Dict[str, Any] = field(default_factory=dict)
    # Straggler wrapper settings.
    straggler: StragglerConfig = field(default_factory=StragglerConfig)


def gym_kwargs_of(embedded: Any) -> Dict[str, Any]:
    """``embedded_env.gym_kwargs`` as plain data (absent in older configs: {})."""
    kwargs = getattr(embedded, "gym_kwargs", None) or {}
    if isinstance(kwargs, DictConfig):
        plain: Dict[str, Any] = OmegaConf.to_container(kwargs, resolve=True)  # type: ignore[assignment]
        return plain
    return dict(kwargs)


def _check(condition: bool, key: str, value: Any, allowed: str) -> None:
    check(condition, f"{_PREFIX}.{key}", value, allowed)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _validate_straggler(cfg: Any) -> None:
    _check(
        cfg.speed_factor_min > 0, "straggler.speed_factor_min", cfg.speed_factor_min, "must be > 0"
    )
    _check(
        cfg.speed_factor_max >= cfg.speed_factor_min,
        "straggler.speed_factor_max",
        cfg.speed_factor_max,
        f"must be >= straggler.speed_factor_min ({cfg.speed_factor_min})",
    )
    for key in ("base_step_seconds", "long_step_seconds", "jitter"):
        value = getattr(cfg, key)
        _check(value >= 0, f"straggler.{key}", value, "must be >= 0")
    _check(
        0.0 <= cfg.long_step_prob <= 1.0,
        "straggler.long_step_prob",
        cfg.long_step_prob,
        "must be a probability in [0, 1]",
    )
    _check(
        cfg.slow_factor >= 1.0,
        "straggler.slow_factor",
        cfg.slow_factor,
        "must be >= 1 (it slows the chosen envs down)",
    )
    indices = list(cfg.slow_env_indices)
    _check(
        all(_is_int(i) and i >= 0 for i in indices),
        "straggler.slow_env_indices",
        indices,
        "must be a list of env indices >= 0",
    )
    _check(
        _is_int(cfg.seed) and cfg.seed >= 0, "straggler.seed", cfg.seed, "must be an integer >= 0"
    )


def validate_embedded_env(cfg: Any) -> None:
    """Check an ``embedded_env`` section; raise on the first bad value.

    Args:
        cfg: an :class:`EmbeddedEnvConfig` or a DictConfig of that shape.

    Raises:
        ConfigError: naming the key, the value and what is allowed.
    """
    resolution = list(cfg.resolution)
    _check(
        len(resolution) == 2 and all(_is_int(v) and v > 0 for v in resolution),
        "resolution",
        resolution,
        "must be [height, width], two positive integers",
    )
    _check(
        _is_int(cfg.frame_skip) and cfg.frame_skip >= 1,
        "frame_skip",
        cfg.frame_skip,
        "must be an integer >= 1",
    )
    scenarios = list(cfg.scenarios)
    _check(
        all(isinstance(s, str) and s for s in scenarios),
        "scenarios",
        scenarios,
        "must be a list of non-empty gym ids",
    )
    _validate_straggler(cfg.straggler)
