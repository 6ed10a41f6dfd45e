"""Keys a trainer cannot honour are refused, never silently ignored.

``ddppo`` runs upstream's lock-step loop and honours every ``rl.ppo`` key;
``ver`` and ``appo`` share its PPO updater, so the learning keys hold for
them too, but not the keys of a collection or targets scheme they do not run.
Which of these refusals apply is each trainer's own: its ``check_config``
classmethod calls them (found through the trainer class that
``habitat_baselines.trainer_name`` names, see :func:`trainer_class`).  Each
refusal is one :class:`ConfigError` naming the key, the value and what is
allowed, and the trainer's kind.
"""

from typing import Any, FrozenSet

from habitat_ver.common.settings_sections import settings_section
from habitat_ver.config.errors import check

__all__ = [
    "refuse_appo_settings",
    "refuse_double_buffering",
    "refuse_overlap",
    "require_gae_flag",
    "trainer_class",
    "trainer_kind",
    "trainer_provides",
]


def trainer_class(config: Any) -> Any:
    """The class registered under ``habitat_baselines.trainer_name`` (None if none)."""
    from habitat_baselines.common.baseline_registry import baseline_registry

    return baseline_registry.get_trainer(config.habitat_baselines.trainer_name)


def trainer_kind(config: Any) -> str:
    """Which of our trainers ``habitat_baselines.trainer_name`` is: its
    class's ``TRAINER_KIND`` (``ddppo``, ``ver``, ``appo``, inherited by a
    user's subclass registered under another name), else the name itself
    (upstream's trainers, whose settings are not ours to check)."""
    name = config.habitat_baselines.trainer_name
    return str(getattr(trainer_class(config), "TRAINER_KIND", name))


def trainer_provides(config: Any) -> FrozenSet[str]:
    """The capabilities ``habitat_baselines.trainer_name``'s class provides to
    return estimators and preemption rules (its ``PROVIDES``; none for
    upstream's trainers)."""
    return frozenset(getattr(trainer_class(config), "PROVIDES", ()))


def refuse_double_buffering(config: Any, kind: str, why: str) -> None:
    """``rl.ppo.use_double_buffered_sampler`` is False: trainer ``kind`` has
    no lock-step buffers to double (``why`` says what it does instead)."""
    ppo = config.habitat_baselines.rl.ppo
    check(
        not ppo.use_double_buffered_sampler,
        "habitat_baselines.rl.ppo.use_double_buffered_sampler",
        ppo.use_double_buffered_sampler,
        f"False for trainer {kind!r}: {why}",
    )


def refuse_overlap(config: Any, kind: str) -> None:
    """``rl.ver.overlap_rollouts_and_learn`` is False: only ver overlaps them."""
    ver = config.habitat_baselines.rl.get("ver")
    if ver is None:
        return
    check(
        not ver.overlap_rollouts_and_learn,
        "habitat_baselines.rl.ver.overlap_rollouts_and_learn",
        ver.overlap_rollouts_and_learn,
        f"False for trainer {kind!r} (only the ver trainer overlaps them)",
    )


def refuse_appo_settings(config: Any, kind: str) -> None:
    """``rl.appo`` is read by the appo trainer only: other trainers refuse a
    value other than its default rather than ignore it."""
    appo = config.habitat_baselines.rl.get("appo")
    if appo is None:
        return
    for name, default in vars(settings_section("rl.appo")()).items():
        check(
            appo[name] == default,
            f"habitat_baselines.rl.appo.{name}",
            appo[name],
            f"{default!r} (the default) for trainer {kind!r}: rl.appo is read by "
            "the appo trainer only",
        )


def require_gae_flag(config: Any, kind: str, why: str) -> None:
    """``rl.ppo.use_gae`` is True: trainer ``kind`` has no Monte-Carlo mode."""
    ppo = config.habitat_baselines.rl.ppo
    check(
        ppo.use_gae,
        "habitat_baselines.rl.ppo.use_gae",
        ppo.use_gae,
        f"True for trainer {kind!r}: {why}",
    )
