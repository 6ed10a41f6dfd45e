"""Straggler preemption for synchronous distributed PPO (DD-PPO).

DD-PPO (Wijmans et al. 2020, section 3 and appendix E): once a fraction
``sync_frac`` of the ranks has finished collecting its rollout, the remaining
ranks stop collecting early, but never before ``min_fraction`` (1/4) of the
rollout.  Ranks count themselves done through the process group's key-value
store.

Unlike upstream, every update counts in a key of its own
(``done/<update index>``), so no rank has to reset a shared counter: upstream
resets one counter on rank 0 after the gradient all-reduce, which races with a
fast rank that already started (or finished) its next rollout.
"""

import math
from typing import Dict, Optional

import torch.distributed as dist

from habitat_ver.distributed.preemption_rule import (
    NoPreemption,
    PreemptionRule,
    PreemptionSetup,
    RolloutEnd,
    RolloutProgress,
)

SHORT_ROLLOUT_FRACTION = 0.25


def dd_ppo_should_preempt(
    rollout_step: int,
    num_steps: int,
    num_done: int,
    world_size: int,
    sync_frac: float,
    min_fraction: float = SHORT_ROLLOUT_FRACTION,
) -> bool:
    """DD-PPO's preemption rule.

    Args:
        rollout_step: steps this rank has collected in the current rollout.
        num_steps: the full rollout length T.
        num_done: ranks that already finished this rollout.
        world_size: number of ranks.
        sync_frac: fraction of ranks that must be done to preempt the rest.
        min_fraction: never preempt before this fraction of T.

    Returns:
        True when this rank should stop collecting now.
    """
    if world_size <= 1:
        return False
    if rollout_step < math.ceil(num_steps * min_fraction):
        return False
    return num_done >= sync_frac * world_size


class RolloutTracker(PreemptionRule):
    """The ``ddppo`` rule: counts, per update, how many ranks finished collecting.

    Args:
        store: the process group's key-value store.
        world_size: number of ranks.
        sync_frac: fraction of ranks done that preempts the rest.
        min_fraction: never preempt before this fraction of the rollout.
        rank: this rank (rank 0 drops old counters).
    """

    def __init__(
        self,
        store: "dist.Store",
        world_size: int,
        sync_frac: float,
        min_fraction: float = SHORT_ROLLOUT_FRACTION,
        rank: int = 0,
    ):
        self._store = dist.PrefixStore("habitat_ver_rollouts", store)
        self._world_size = world_size
        self._sync_frac = sync_frac
        self._min_fraction = min_fraction
        self._rank = rank

    @classmethod
    def from_setup(cls, setup: PreemptionSetup) -> PreemptionRule:
        """The tracker of a multi-rank run; a single rank is never preempted."""
        if setup.store is None:
            return NoPreemption()
        return cls(
            setup.store,
            setup.world_size,
            setup.sync_frac,
            setup.short_rollout_fraction,
            rank=setup.rank,
        )

    @staticmethod
    def _key(update_index: int) -> str:
        return f"done/{update_index}"

    def num_done(self, update_index: int) -> int:
        # add(key, 0) reads a counter without blocking when it is still absent.
        return int(self._store.add(self._key(update_index), 0))

    def mark_done(self, update_index: int) -> None:
        """Record that this rank finished collecting for ``update_index``."""
        self._store.add(self._key(update_index), 1)

    def should_preempt(self, update_index: int, rollout_step: int, num_steps: int) -> bool:
        if rollout_step < math.ceil(num_steps * self._min_fraction):
            return False  # skip the store round-trip early in the rollout
        return dd_ppo_should_preempt(
            rollout_step,
            num_steps,
            self.num_done(update_index),
            self._world_size,
            self._sync_frac,
            self._min_fraction,
        )

    def forget(self, update_index: int) -> Optional[bool]:
        """Drop an old update's counter (called by rank 0 once all ranks passed it)."""
        return self._store.delete_key(self._key(update_index))

    # ------------------------------------------------------ PreemptionRule
    def should_stop(self, update: int, progress: RolloutProgress) -> bool:
        return self.should_preempt(update, progress.collected, progress.capacity)

    def end_rollout(self, update: int, rollout: RolloutEnd) -> None:
        self.mark_done(update)

    def end_update(self, update: int) -> Dict[str, float]:
        if self._rank == 0 and update >= 2:
            # Every rank passed update u-1's all-reduce before rank 0 got here.
            self.forget(update - 2)
        return {}
