"""What a storage hands a return estimator: its steps, laid out, and a bootstrap.

Storages only store; the returns are computed in one place, the updater's
targets step (:mod:`habitat_ver.updaters.targets`), which reads a storage's
steps with ``return_steps()`` and writes its result back with
``store_returns(returns)``.  Both lock-step and VER storages lay their steps
out as a :class:`RolloutSteps` and share :class:`StepsForReturns`, whose
``compute_returns(next_value, use_gae, gamma, tau)`` (upstream's contract,
called by upstream's loop after collection) makes a storage record what its
returns are computed from: the value after the last step; VER also cuts its
steps into sequences.
"""

from typing import Any, Dict, NamedTuple, Optional, Protocol

from torch import Tensor

__all__ = ["FillsReturns", "RolloutSteps", "StepsForReturns"]


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


class FillsReturns(Protocol):
    """A targets step that computes a storage's returns and stores them there
    (:meth:`habitat_ver.updaters.targets.RolloutTargets.fill_returns`)."""

    def fill_returns(self, rollouts: Any) -> None: ...


class StepsForReturns:
    """The part of our storages a return estimator talks to.

    A storage implements :meth:`lay_out_steps` (what ``compute_returns``
    records), :meth:`return_steps` and :meth:`store_returns`.

    Attributes:
        returns_for_readers: None, unless the run's updater has no targets
            step and reads ``returns`` straight from the storage (upstream's
            ``PPO``, ``HRLPPO``): then the trainer hands the storage the
            run's targets step here and :meth:`compute_returns` runs it.
    """

    returns_for_readers: Optional[FillsReturns] = None

    def compute_returns(
        self,
        next_value: Optional[Tensor] = None,
        use_gae: bool = True,
        gamma: float = 0.99,
        tau: float = 0.95,
    ) -> None:
        """Upstream's contract, called by upstream's ``PPOTrainer._update_agent``
        (and by the ``ver`` trainer) between the bootstrap value and the update:
        :meth:`lay_out_steps`, then, for an updater without a targets step,
        the targets step in :attr:`returns_for_readers` -- the one adapter
        between upstream's loop, which has no other hook there, and the
        targets step.  Our updater's targets step fills the returns itself
        before its epochs.

        ``gamma`` and ``tau`` are unused (upstream's signature): the targets
        step reads the same ``rl.ppo`` keys from the config.

        Args:
            next_value: value of the observation after the last step,
                ``[num_envs, 1]`` (VER: optional, see its :meth:`lay_out_steps`).
            use_gae: upstream's ``rl.ppo.use_gae`` (only where the lock-step
                storage keeps ``next_value``).
        """
        self.lay_out_steps(next_value, use_gae)
        if self.returns_for_readers is not None:
            self.returns_for_readers.fill_returns(self)

    def lay_out_steps(self, next_value: Optional[Tensor], use_gae: bool) -> None:
        """Records what the returns of the steps collected are computed from."""
        raise NotImplementedError

    def return_steps(self) -> RolloutSteps:
        """The steps collected, laid out for a return estimator."""
        raise NotImplementedError

    def store_returns(self, returns: Tensor) -> None:
        """Writes the returns of :meth:`return_steps`' steps, in their layout."""
        raise NotImplementedError
