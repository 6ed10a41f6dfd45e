"""Keys a trainer cannot honour are refused, never silently ignored.

``ddppo`` runs upstream's lock-step loop and honours every ``rl.ppo`` key;
``ver`` and ``appo`` share its PPO updater
(:class:`~habitat_ver.updaters.ppo.PPOUpdater`), so the learning keys hold for
them too, but not the keys of a collection or targets scheme they do not run.
Each refusal is one :class:`ConfigError` naming the key, the value and what is
allowed.
"""

from typing import Any

from habitat_ver.config.errors import check

__all__ = ["validate_honoured_keys"]


# Why a trainer cannot run with rl.ppo.use_double_buffered_sampler=True.
_NO_DOUBLE_BUFFERING = {
    "ver": "ver's env workers step as soon as their own action arrives (no lock-step buffers)",
    "appo": "appo's rollout workers double-buffer by env groups (rl.appo.num_env_groups)",
}


def trainer_kind(config: Any) -> str:
    """Which of our trainers ``habitat_baselines.trainer_name`` is: its
    class's ``TRAINER_KIND`` (``ddppo``, ``ver``, ``appo``, inherited by a
    user's subclass registered under another name), else the name itself
    (upstream's trainers, whose settings are not ours to check)."""
    from habitat_baselines.common.baseline_registry import baseline_registry

    name = config.habitat_baselines.trainer_name
    trainer = baseline_registry.get_trainer(name)
    return str(getattr(trainer, "TRAINER_KIND", name))


def validate_honoured_keys(config: Any) -> None:
    """Refuses the keys ``habitat_baselines.trainer_name`` would ignore."""
    baselines = config.habitat_baselines
    trainer, ppo = trainer_kind(config), baselines.rl.ppo
    key = "habitat_baselines.rl.ppo."
    if trainer in _NO_DOUBLE_BUFFERING:
        check(
            not ppo.use_double_buffered_sampler,
            key + "use_double_buffered_sampler",
            ppo.use_double_buffered_sampler,
            f"False for trainer {trainer!r}: {_NO_DOUBLE_BUFFERING[trainer]}",
        )
    ver = baselines.rl.get("ver")
    if trainer in ("ddppo", "appo") and ver is not None:
        check(
            not ver.overlap_rollouts_and_learn,
            "habitat_baselines.rl.ver.overlap_rollouts_and_learn",
            ver.overlap_rollouts_and_learn,
            f"False for trainer {trainer!r} (only the ver trainer overlaps them)",
        )
    appo = baselines.rl.get("appo")
    if trainer in ("ddppo", "ver") and appo is not None:
        _check_appo_untouched(appo, trainer)
    if trainer == "appo":
        check(
            ppo.use_gae,
            key + "use_gae",
            ppo.use_gae,
            "True for trainer 'appo': its targets are V-trace's (rl.appo.vtrace_rho_clip, "
            "rl.appo.vtrace_c_clip), there is no Monte-Carlo mode",
        )
        _check_our_updater(baselines.updater_name, trainer)


def _check_appo_untouched(appo: Any, trainer: str) -> None:
    """``rl.appo`` is read by the appo trainer only: other trainers refuse a
    value other than its default rather than ignore it."""
    from habitat_ver.config.appo import AppoConfig

    for name, default in vars(AppoConfig()).items():
        check(
            appo[name] == default,
            f"habitat_baselines.rl.appo.{name}",
            appo[name],
            f"{default!r} (the default) for trainer {trainer!r}: rl.appo is read by "
            "the appo trainer only",
        )


def _check_our_updater(name: str, trainer: str) -> None:
    """``trainer`` needs an updater with a targets step (our ``PPOUpdater``)."""
    from habitat_baselines.common.baseline_registry import baseline_registry

    from habitat_ver.updaters.ppo import PPOUpdater

    updater = baseline_registry.get_updater(name)
    check(
        isinstance(updater, type) and issubclass(updater, PPOUpdater),
        "habitat_baselines.updater_name",
        name,
        f"PPOUpdater (or a subclass) for trainer {trainer!r}: it sets the V-trace targets step",
    )
