"""A toy preemption rule, all in one file: cut every rollout at half.

What a new rule needs: a :class:`PreemptionRule` with a ``from_setup``
builder (and one ``register_preemption_rule`` call, made by the test).
"""

from typing import Dict, List, Tuple

from habitat_ver.distributed.preemption_rule import (
    PreemptionRule,
    PreemptionSetup,
    RolloutEnd,
    RolloutProgress,
)


class HalfRollout(PreemptionRule):
    """Stops a rank once it collected half its rollout; logs how many it cut."""

    def __init__(self, setup: PreemptionSetup):
        self.setup = setup
        self.cuts = 0
        self.calls: List[Tuple[str, int]] = []  # (hook, update), in call order

    @classmethod
    def from_setup(cls, setup: PreemptionSetup) -> "HalfRollout":
        return cls(setup)

    def start_rollout(self, update: int) -> None:
        self.calls.append(("start_rollout", update))

    def should_stop(self, update: int, progress: RolloutProgress) -> bool:
        stop = progress.collected >= progress.capacity // 2
        self.cuts += stop
        return stop

    def end_rollout(self, update: int, rollout: RolloutEnd) -> None:
        self.calls.append(("end_rollout", update))

    def end_update(self, update: int) -> Dict[str, float]:
        self.calls.append(("end_update", update))
        return {"system/toy_cuts": float(self.cuts)}
