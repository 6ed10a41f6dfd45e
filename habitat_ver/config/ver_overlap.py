"""``habitat_baselines.rl.ver.overlap_rollouts_and_learn``: ``True``, ``False`` or ``auto``.

Upstream types the key as a bool.  Our schema widens it so that it can also be
``auto``: the ``ver`` trainer then decides before every update whether the envs
keep stepping while PPO learns, from the update before it (off for the first):
on when learning took at least :data:`AUTO_LEARN_SHARE` of that update's wall
time *and* the machine had at least :data:`AUTO_IDLE_CORES` idle cores while
the trainer waited for that rollout.  Overlap can hide at most the learning
share of an update, and costs a policy version of lag on the steps collected
meanwhile; below a quarter it is not worth that.  And it only gains where
collection leaves cores idle (envs waiting on rendering or physics elsewhere):
where the env workers already keep every core busy, learning beside them only
takes their cores (on PointNav with 8 CPU-rendered envs on 2 cores, overlap ran
at 0.74x plain ``ver``).
"""

from dataclasses import dataclass
from typing import Any, Optional

from habitat_baselines.config.default_structured_configs import VERConfig

AUTO = "auto"
# Learning's share of an update's wall time from which `auto` overlaps.
AUTO_LEARN_SHARE = 0.25
# Idle cores during collection from which `auto` overlaps: room for the
# learner beside the envs.
AUTO_IDLE_CORES = 0.5
KEY = "habitat_baselines.rl.ver.overlap_rollouts_and_learn"


@dataclass
class HabitatVerVERConfig(VERConfig):
    """Upstream's ``rl.ver`` with ``overlap_rollouts_and_learn`` widened to ``auto``."""

    # True, False, or "auto" (on when learning took >= 25% of the last update
    # and >= 0.5 cores sat idle while its rollout was collected).
    overlap_rollouts_and_learn: Any = False


def auto_overlaps(learn_s: float, collect_s: float, idle_cores: Optional[float]) -> bool:
    """``auto``'s choice for the next update, from the last one: the seconds
    the trainer waited for its rollout, the seconds it learnt, and the idle
    cores while it waited (None where unknown: decided on the times alone)."""
    total = learn_s + collect_s
    if total <= 0 or learn_s < AUTO_LEARN_SHARE * total:
        return False
    return idle_cores is None or idle_cores >= AUTO_IDLE_CORES
