"""``habitat_baselines.rl.ver.overlap_rollouts_and_learn``: ``True``, ``False`` or ``auto``.

Upstream types the key as a bool.  Our schema widens it so that it can also be
``auto``: the ``ver`` trainer then decides before every update whether the envs
keep stepping while PPO learns, from the update before it (off for the first):
on when learning took at least :data:`AUTO_LEARN_SHARE` of that update's wall
time *and* the run left at least :data:`AUTO_SPARE_CORES` cores unused while
the trainer waited for that rollout (:mod:`habitat_ver.system.spare_cores`).
Overlap can hide at most the learning share of an update, and costs a policy
version of lag on the steps collected meanwhile; below a quarter it is not
worth that.  And it only gains where collection leaves cores to the learner:
envs that wait on rendering or physics elsewhere, or a machine shared with
other jobs (the scheduler gives a run with more runnable threads a larger
share).  Where the run's own env workers already fill every core, learning
beside them only takes their cores and overlap is slower than plain ``ver``
(docs/BENCHMARKS.md).
"""

from dataclasses import dataclass
from typing import Any, Optional

from habitat_baselines.config.default_structured_configs import VERConfig

AUTO = "auto"
# Learning's share of an update's wall time from which `auto` overlaps.
AUTO_LEARN_SHARE = 0.25
# Cores the run left unused during collection from which `auto` overlaps:
# room for the learner beside the envs.
AUTO_SPARE_CORES = 0.5
KEY = "habitat_baselines.rl.ver.overlap_rollouts_and_learn"


@dataclass
class HabitatVerVERConfig(VERConfig):
    """Upstream's ``rl.ver`` with ``overlap_rollouts_and_learn`` widened to ``auto``."""

    # True, False, or "auto" (on when learning took >= 25% of the last update
    # and the run left >= 0.5 cores unused while its rollout was collected).
    overlap_rollouts_and_learn: Any = False


def auto_overlaps(learn_s: float, collect_s: float, spare_cores: Optional[float]) -> bool:
    """``auto``'s choice for the next update, from the last one: the seconds
    the trainer waited for its rollout, the seconds it learnt, and the cores
    the run left unused while it waited (None where unknown: decided on the
    times alone)."""
    total = learn_s + collect_s
    if total <= 0 or learn_s < AUTO_LEARN_SHARE * total:
        return False
    return spare_cores is None or spare_cores >= AUTO_SPARE_CORES
