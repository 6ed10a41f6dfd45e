"""What a storage hands a return estimator: its steps, laid out, and a bootstrap.

Storages only store.  After a rollout, upstream's contract
``compute_returns(next_value, use_gae, gamma, tau)`` makes a storage record
what its returns are computed from (the value after the last step; VER also
cuts its steps into sequences); the returns themselves are computed by the
updater's targets step (:mod:`habitat_ver.updaters.targets`), which reads the
steps with ``return_steps()`` and writes its result back with
``store_returns(returns)``.  Both lock-step and VER storages lay their steps
out as a :class:`RolloutSteps`.
"""

from typing import Any, Dict, NamedTuple, Optional

from torch import Tensor

__all__ = ["RolloutSteps", "fill_on_compute"]


class RolloutSteps(NamedTuple):
    """The learnable steps of a rollout, in one of two layouts.

    * time-major (``lengths`` is None; the lock-step storage): ``K`` envs of
      ``T`` steps each, ``[T, K, 1]``;
    * sequences (VER's storage): ``K`` sequences of different lengths stored
      back to back in time order, ``[S, 1]`` with ``S = lengths.sum()``.

    Either way column / sequence ``k`` is followed in time by an observation
    of value ``bootstrap_values[k]`` (read only where its last step is not
    done).

    Attributes:
        rewards: reward received after acting at each step.
        values: critic's value of the observation at each step.
        dones: True where the episode ended after that step (bool).
        bootstrap_values: value after each column's / sequence's last step, ``[K, 1]``.
        lengths: None (time-major) or the sequences' lengths, ``[K]``.
        truncated: None (no time-limit cut) or True where the episode was cut
            by a time limit (implies ``dones``).
        truncation_values: value to bootstrap from after each cut (with ``truncated``).
    """

    rewards: Tensor
    values: Tensor
    dones: Tensor
    bootstrap_values: Tensor
    lengths: Optional[Tensor] = None
    truncated: Optional[Tensor] = None
    truncation_values: Optional[Tensor] = None

    def truncation(self) -> Dict[str, Tensor]:
        """``truncated`` and ``truncation_values`` as keyword arguments of
        :mod:`habitat_ver.algo.gae`'s functions ({} without cuts)."""
        if self.truncated is None or self.truncation_values is None:
            return {}
        return dict(truncated=self.truncated, truncation_values=self.truncation_values)


def fill_on_compute(storage: Any) -> None:
    """For an updater without a targets step (upstream's ``PPO``, ``HRLPPO``),
    which reads ``returns`` straight from the storage: the trainer handed the
    storage the run's estimator (``storage.returns_for_readers``), and
    upstream's ``compute_returns`` fills the returns through it."""
    estimator = getattr(storage, "returns_for_readers", None)
    if estimator is not None:
        estimator.fill_returns(storage)
