"""``habitat_baselines.rl.ver.overlap_rollouts_and_learn``: ``True``, ``False`` or ``auto``.

Upstream types the key as a bool.  Our schema widens it so that it can also be
``auto``: the ``ver`` trainer then decides before every update whether the envs
keep stepping while PPO learns (:mod:`habitat_ver.trainers.ver_settings`, which
also checks the value).
"""

from dataclasses import dataclass
from typing import Any

from habitat_baselines.config.default_structured_configs import VERConfig

KEY = "habitat_baselines.rl.ver.overlap_rollouts_and_learn"


@dataclass
class HabitatVerVERConfig(VERConfig):
    """Upstream's ``rl.ver`` with ``overlap_rollouts_and_learn`` widened to ``auto``."""

    # True, False, or "auto" (on when learning took >= 25% of the last update
    # and the run left >= 0.5 cores unused while its rollout was collected).
    overlap_rollouts_and_learn: Any = False
