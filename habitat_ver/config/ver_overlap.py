"""``habitat_baselines.rl.ver.overlap_rollouts_and_learn``: ``True``, ``False`` or ``auto``.

Upstream types the key as a bool.  Our schema widens it so that it can also be
``auto``: the ``ver`` trainer then decides before every update whether the envs
keep stepping while PPO learns, from the update before it (off for the first):
on when learning took at least :data:`AUTO_LEARN_SHARE` of that update's wall
time.  Overlap can hide at most the learning share of an update, and costs a
policy version of lag on the steps collected meanwhile, plus inference competing
with the learner for the cores; below a quarter it is not worth that.
"""

from dataclasses import dataclass
from typing import Any

from habitat_baselines.config.default_structured_configs import VERConfig

AUTO = "auto"
# Learning's share of an update's wall time from which `auto` overlaps.
AUTO_LEARN_SHARE = 0.25
KEY = "habitat_baselines.rl.ver.overlap_rollouts_and_learn"


@dataclass
class HabitatVerVERConfig(VERConfig):
    """Upstream's ``rl.ver`` with ``overlap_rollouts_and_learn`` widened to ``auto``."""

    # True, False, or "auto" (on when learning took >= 25% of the last update).
    overlap_rollouts_and_learn: Any = False


def auto_overlaps(learn_s: float, collect_s: float) -> bool:
    """``auto``'s choice for the next update, from the last one's wall times:
    the seconds the trainer waited for its rollout and the seconds it learnt."""
    total = learn_s + collect_s
    return total > 0 and learn_s >= AUTO_LEARN_SHARE * total
