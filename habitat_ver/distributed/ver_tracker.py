"""VER's estimated optimal preemption across ranks, through the store.

The process side of :mod:`habitat_ver.distributed.ver_preemption` (VER paper,
section 2.3). Per update ``u``:

1. when its collection ends, each rank publishes its mean per-env step time in
   rollout ``u`` (inference included) and its previous learning time
   (:meth:`VERPreemptionTracker.publish`);
2. after learning ``u`` -- every rank passed the gradient all-reduce, so every
   rank's numbers are in the store -- each rank reads them all and computes the
   same ``S`` for rollout ``u + 1`` (:meth:`VERPreemptionTracker.plan_next`);
3. while collecting ``u + 1`` each rank adds its completed steps to one
   counter and stops once the counter reaches ``S``
   (:meth:`VERPreemptionTracker.should_preempt`).

No step waits for another rank: the store calls are one ``add`` per
inference batch (a round trip to the store, never a wait for other ranks),
and the reads of step 2 find keys already written.
"""

import math
from typing import Any, Dict, List, Optional

import torch.distributed as dist

from habitat_ver.distributed.preemption_rule import (
    NoPreemption,
    PreemptionRule,
    PreemptionSetup,
    RolloutEnd,
    RolloutProgress,
)
from habitat_ver.distributed.ver_preemption import optimal_preemption_steps

# Logged after each update: S planned for the next rollout (common/log_keys.py).
PLANNED_STEPS_KEY = "system/ver_preemption_steps"


class VERPreemptionTracker(PreemptionRule):
    """The ``ver`` rule: one rank's view of VER's preemption decisions.

    Args:
        store: the process group's key-value store.
        rank, world_size: this rank and the number of ranks.
        envs_per_rank: N.
        num_steps: T (a rank's buffer holds ``T * N`` steps).
    """

    def __init__(
        self, store: "dist.Store", rank: int, world_size: int, envs_per_rank: int, num_steps: int
    ):
        self._store = dist.PrefixStore("habitat_ver_ver_preemption", store)
        self._rank, self._world_size = rank, world_size
        self._envs, self._num_steps = envs_per_rank, num_steps
        # S for the rollout being collected; None: collect every step.
        self.target: Optional[int] = None

    @classmethod
    def from_setup(cls, setup: PreemptionSetup) -> PreemptionRule:
        """The tracker of a multi-rank run; a single rank is never preempted."""
        if setup.store is None:
            return NoPreemption()
        return cls(setup.store, setup.rank, setup.world_size, setup.envs_per_rank, setup.num_steps)

    def publish(self, update: int, step_time: float, learn_time: float) -> None:
        """This rank's statistics of rollout ``update``.

        Args:
            step_time: mean seconds between two steps of one env (wall time of
                the collection x N / steps collected), inference included.
            learn_time: seconds the previous update's learning took (0 if none).
        """
        self._store.set(f"stats/{update}/{self._rank}", f"{step_time!r},{learn_time!r}")

    def _read_stats(self, update: int) -> List[List[float]]:
        keys = [f"stats/{update}/{r}" for r in range(self._world_size)]
        self._store.wait(keys)
        return [[float(v) for v in self._store.get(k).decode().split(",")] for k in keys]

    def plan_next(self, update: int) -> int:
        """Sets and returns ``S`` for the rollout after ``update``.

        Every rank computes it from the same published numbers, so every rank
        gets the same ``S``. A rank's learning time includes its wait in the
        gradient all-reduce for the last rank to finish collecting; that last
        rank's time (the smallest) is the learning alone, so it is used.
        """
        stats = self._read_stats(update)
        step_times = [max(t, 1e-9) if math.isfinite(t) else 1e-9 for t, _ in stats]
        learn_time = min(lt for _, lt in stats)
        self.target = optimal_preemption_steps(
            step_times, self._envs, self._num_steps, learn_time
        ).steps
        return self.target

    def should_preempt(self, update: int, new_steps: int) -> bool:
        """Counts ``new_steps`` of this rank; True once ``S`` were collected
        across all ranks (never before the first plan exists)."""
        if self.target is None:
            return False
        total = int(self._store.add(f"steps/{update}", int(new_steps)))
        return total >= self.target

    def forget(self, update: int) -> None:
        """Drops an old update's keys (rank 0, once every rank passed it)."""
        self._store.delete_key(f"steps/{update}")
        for r in range(self._world_size):
            self._store.delete_key(f"stats/{update}/{r}")

    # ------------------------------------------------------ PreemptionRule
    def should_stop(self, update: int, progress: RolloutProgress) -> bool:
        return self.should_preempt(update, progress.new_steps)

    def end_rollout(self, update: int, rollout: RolloutEnd) -> None:
        self.publish(update, rollout.step_time, rollout.learn_time)

    def end_update(self, update: int) -> Dict[str, float]:
        planned = float(self.plan_next(update))
        if self._rank == 0 and update >= 2:
            self.forget(update - 2)  # every rank passed update u-1's all-reduce
        return {PLANNED_STEPS_KEY: planned}

    def state(self) -> Dict[str, Any]:
        return {"target": self.target}

    def restore(self, state: Dict[str, Any]) -> None:
        # The first rollout after a restart has no previous rollout to fill
        # from, so it is not cut; the target comes back for the one after.
        if state.get("target") is not None:
            self.target = int(state["target"])
