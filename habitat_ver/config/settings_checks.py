"""Checks of the settings each component reads, registered by the component.

``config/`` imports no learning code.  A component that reads a setting (a
return estimator, a preemption rule, the ``ver`` trainer's overlap, the
learner's threads, the skills' checkpoints) keeps the check of that setting
next to its own code and registers it here, in
:mod:`habitat_ver.registration`; :func:`habitat_ver.config.validate.validate`
runs every registered check, in registration order, without knowing the
components.  A check takes the whole config and raises
:class:`~habitat_ver.config.errors.ConfigError` naming the key, the value and
what is allowed.

A check registered with ``training=True`` reads what only training reads: it
is skipped under ``habitat_baselines.evaluate=True``, like
:data:`habitat_ver.config.validate.TRAINING_CHECKS`.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, Tuple

__all__ = [
    "SettingsCheck",
    "register_settings_check",
    "settings_checks",
    "unregister_settings_check",
]

SettingsCheck = Callable[[Any], None]


@dataclass(frozen=True)
class _Entry:
    check: SettingsCheck
    training: bool


_CHECKS: Dict[str, _Entry] = {}


def register_settings_check(name: str, check: SettingsCheck, training: bool = False) -> None:
    """Makes :func:`~habitat_ver.config.validate.validate` run ``check``.

    Args:
        name: what it checks, for messages and :func:`unregister_settings_check`.
        check: config -> None, raising ``ConfigError`` for a value it refuses.
        training: only training reads what it checks (skipped in evaluation).

    Raises:
        ValueError: ``name`` is already registered to another check.
    """
    existing = _CHECKS.get(name)
    if existing is not None and existing.check != check:
        raise ValueError(
            f"settings check {name!r} is already registered to {existing.check!r}; "
            f"refusing to overwrite it with {check!r}"
        )
    _CHECKS[name] = _Entry(check, training)


def unregister_settings_check(name: str) -> None:
    """Drops ``name`` (tests registering a toy check clean up with it)."""
    _CHECKS.pop(name, None)


def settings_checks(training: bool) -> Tuple[SettingsCheck, ...]:
    """The registered checks of training's settings (``training``) or of the
    others, in registration order."""
    return tuple(entry.check for entry in _CHECKS.values() if entry.training == training)
