"""The settings sections components bring to the config schema, by key.

A component that reads settings of its own (the ``appo`` trainer's
``rl.appo``, the ``ver`` trainer's ``rl.ver``, VERPolicy's ``ver_policy``)
declares them as a dataclass next to its code and registers it here under its
key, in :mod:`habitat_ver.registration`.  :mod:`habitat_ver.config.schema`
composes ``habitat_baselines``' structured schema from what is registered, so
a new section edits no file of ``config/``.

A key is a section of ``habitat_baselines`` (``"learner"``) or of its ``rl``
section (``"rl.appo"``); a section whose key upstream's schema already has
(``"rl.ver"``) replaces upstream's, and must then extend upstream's dataclass.
Registered sections are passive config records: checkpoints that pickle a
config may hold them (:mod:`habitat_ver.common.checkpoint`).
"""

import dataclasses
from typing import Dict, Optional, Tuple

__all__ = [
    "PARENTS",
    "is_settings_section",
    "moved_settings_section",
    "register_settings_section",
    "settings_section",
    "settings_sections",
    "unregister_settings_section",
]

# The sections a key may extend: "" is habitat_baselines itself.
PARENTS = ("", "rl")

_SECTIONS: Dict[str, type] = {}


def _parent_and_name(key: str) -> Tuple[str, str]:
    parent, _, name = key.rpartition(".")
    if parent not in PARENTS or not name.isidentifier():
        raise ValueError(
            f"settings section key {key!r} is not allowed: a name in "
            f"habitat_baselines ('learner') or in habitat_baselines.rl ('rl.appo')"
        )
    return parent, name


def register_settings_section(key: str, schema: type) -> None:
    """Adds ``schema`` to the config schema as ``habitat_baselines.<key>``.

    Args:
        key: ``"<name>"`` or ``"rl.<name>"``.
        schema: a dataclass, every field with a default.

    Raises:
        ValueError: ``key`` is malformed or already registered to another
            dataclass, or ``schema`` is not a dataclass.
    """
    _parent_and_name(key)
    if not (isinstance(schema, type) and dataclasses.is_dataclass(schema)):
        raise ValueError(f"settings section {key!r} must be a dataclass, got {schema!r}")
    existing = _SECTIONS.get(key)
    if existing is not None and existing is not schema:
        raise ValueError(
            f"settings section {key!r} is already registered to {existing.__qualname__}; "
            f"refusing to overwrite it with {schema.__qualname__}"
        )
    _SECTIONS[key] = schema


def unregister_settings_section(key: str) -> None:
    """Drops ``key`` (tests registering a toy section clean up with it)."""
    _SECTIONS.pop(key, None)


def settings_sections(parent: str = "") -> Dict[str, type]:
    """Name -> dataclass of the sections registered in ``parent`` (``""``:
    ``habitat_baselines``; ``"rl"``), in registration order."""
    return {
        name: schema
        for key, schema in _SECTIONS.items()
        for section_parent, name in [_parent_and_name(key)]
        if section_parent == parent
    }


def settings_section(key: str) -> type:
    """The dataclass registered under ``key``.

    Raises:
        KeyError: nothing is registered under ``key``.
    """
    if key not in _SECTIONS:
        raise KeyError(
            f"no settings section registered under {key!r} (registered: {sorted(_SECTIONS)})"
        )
    return _SECTIONS[key]


def moved_settings_section(full_name: str) -> Optional[type]:
    """The registered section's dataclass whose class name ``full_name`` ends
    with, where a checkpoint written before the class moved to another module
    names it by its old path (``habitat_ver.config.schema.LearnerConfig``)."""
    name = full_name.rpartition(".")[2]
    found = [schema for schema in _SECTIONS.values() if schema.__qualname__ == name]
    return found[0] if len(found) == 1 else None


def is_settings_section(full_name: str) -> bool:
    """Whether ``module.qualname`` names a registered section's dataclass."""
    return any(
        f"{schema.__module__}.{schema.__qualname__}" == full_name for schema in _SECTIONS.values()
    )
