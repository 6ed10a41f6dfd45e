"""The HAB skill checkpoints that ship with habitat-ver.

``habitat_ver/skill_checkpoints/<skill>.pth`` are the CPU profile's trained
skills (state-only ``VERPolicy``, LSTM 128; habitat_ver/config/hab_profile.py),
each with its provenance in ``provenance.json`` (config, commit, steps, data,
val success), written by ``python -m habitat_ver.tools.ship_skill``.  The
``hab/*`` configs read them in the CPU profile through
``${habitat_ver_shipped_skill:<skill>,<trained path>}``: the shipped file, or
where none is shipped, the user's own run's.
"""

import json
import os
from typing import Any, Dict

from omegaconf import OmegaConf

SHIPPED_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "skill_checkpoints"
)
PROVENANCE = "provenance.json"
SHIPPED_RESOLVER = "habitat_ver_shipped_skill"


def shipped_checkpoint(skill: str) -> str:
    """The path of the shipped checkpoint of ``skill``, whether or not it exists."""
    return os.path.join(SHIPPED_DIR, f"{skill}.pth")


def shipped_or_trained(skill: str, trained: str) -> str:
    """The resolver: the shipped checkpoint of ``skill`` where habitat-ver
    ships one, else ``trained`` (the user's own run's file; a missing one is
    named, with its config key, by the skill checkpoint check at start)."""
    shipped = shipped_checkpoint(skill)
    return shipped if os.path.exists(shipped) else str(trained)


def provenance() -> Dict[str, Any]:
    """``{skill: record}`` of the shipped checkpoints ({} when none)."""
    path = os.path.join(SHIPPED_DIR, PROVENANCE)
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return dict(json.load(f))


def register_shipped_resolver() -> None:
    if not OmegaConf.has_resolver(SHIPPED_RESOLVER):
        OmegaConf.register_new_resolver(SHIPPED_RESOLVER, shipped_or_trained)
