"""Lock-step rollout storage for the DD-PPO (SyncOnRL) trainer.

Upstream's :class:`RolloutStorage` keeps its GAE loop inline in
``compute_returns``; this subclass keeps every buffer, constructor argument
and method of upstream but only stores: ``compute_returns`` records the
bootstrap value (:class:`~habitat_ver.storage.return_steps.StepsForReturns`),
and the updater's targets step computes the returns from
:meth:`LockstepRolloutStorage.return_steps`. Unlike upstream, the returns of
rows not learnt on are NaN, so advantage normalisation sees only the steps of
this rollout.
"""

from typing import Any, Callable, Dict, Optional, TypeVar, cast

import torch
from habitat_baselines.common.rollout_storage import RolloutStorage
from habitat_baselines.utils.timing import g_timer
from torch import Tensor

from habitat_ver.algo.gae import dones_from_next_masks
from habitat_ver.storage.return_steps import RolloutSteps, StepsForReturns

__all__ = ["LockstepRolloutStorage"]

_Method = TypeVar("_Method", bound=Callable[..., Any])
# habitat's timer is untyped; the context decorator it returns keeps the
# signature of the method it wraps.
_avg_time: Any = g_timer.avg_time


def _timed(key: str, level: int) -> Callable[[_Method], _Method]:
    """``@g_timer.avg_time(key, level=level)``, typed."""
    decorator: Callable[[_Method], _Method] = _avg_time(key, level=level)
    return decorator


class LockstepRolloutStorage(StepsForReturns, RolloutStorage):
    """habitat's ``RolloutStorage`` that leaves the returns to a return estimator.

    The constructor is upstream's, unchanged::

        LockstepRolloutStorage(numsteps, num_envs, observation_space,
                               action_space, actor_critic,
                               is_double_buffered=False)

    Buffers are time-major ``[numsteps + 1, num_envs, ...]`` in habitat's
    layout: ``masks[t + 1]`` (not done) describes step ``t``. In the
    double-buffered layout each half of the envs advances its own step index,
    but returns are only computed once both halves stand at the same index
    (upstream's ``current_rollout_step_idx`` asserts it).

    Time-limit cuts (:meth:`mark_truncated`) are kept beside the buffers,
    in the masks' layout: ``truncated[t + 1]`` describes step ``t``.
    """

    # Upstream's compute_returns, timed under upstream's key.
    compute_returns = _timed("rollout_storage.compute_returns", level=1)(
        StepsForReturns.compute_returns
    )

    def __init__(self, numsteps: int, num_envs: int, *args: Any, **kwargs: Any) -> None:
        super().__init__(numsteps, num_envs, *args, **kwargs)
        self.truncated = torch.zeros(numsteps + 1, num_envs, 1, dtype=torch.bool)
        # The value after the last step, recorded by compute_returns.
        self._bootstrap_value: Optional[Tensor] = None

    def mark_truncated(self, truncated: Tensor, buffer_index: int = 0) -> None:
        """Flags which envs' step just inserted (and advanced past) ended in a
        time-limit cut; its return then bootstraps instead of stopping.

        Args:
            truncated: one flag per env of the buffer (all envs unless
                double-buffered).
            buffer_index: as in ``insert``.

        Shapes:
            truncated: ``[num_envs / nbuffers]`` or ``[num_envs / nbuffers, 1]``.
        """
        n = self.truncated.shape[1] // len(self.current_rollout_step_idxs)  # one index per buffer
        envs = slice(buffer_index * n, (buffer_index + 1) * n)
        row = self.current_rollout_step_idxs[buffer_index]
        self.truncated[row, envs] = truncated.cpu().bool().view(n, 1)

    def _buffer(self, key: str) -> Tensor:
        """A top-level buffer (habitat's TensorDict types each entry as a
        tensor or a nested dict; these are tensors)."""
        return cast(Tensor, self.buffers[key])

    def _truncation(self, num_steps: int, dones: Tensor) -> Dict[str, Tensor]:
        """Cuts among the ``num_steps`` steps and the value to bootstrap there.

        The observation after a cut is already the next episode's first, so
        the value after the cut is approximated by the cut step's own value,
        ``V(s_t)`` for ``V(s_{t+1})`` (Sample Factory's choice).
        """
        cut = self.truncated[1 : num_steps + 1].to(dones.device) & dones
        if not bool(cut.any()):
            return {}
        return dict(truncated=cut, truncation_values=self._buffer("value_preds")[:num_steps])

    def lay_out_steps(self, next_value: Optional[Tensor], use_gae: bool) -> None:
        """Records ``next_value`` as the bootstrap value of the ``T`` steps
        collected.  ``use_gae`` only decides where upstream stores
        ``next_value`` (kept, so that every buffer stays identical to upstream's).

        Shapes:
            next_value: ``[num_envs, 1]``

        Raises:
            ValueError: ``next_value`` is None.
        """
        if next_value is None:
            raise ValueError(
                "LockstepRolloutStorage.compute_returns needs next_value, the value "
                "after the last step ([num_envs, 1]); got None"
            )
        num_steps = self.current_rollout_step_idx
        # Upstream stores next_value in slot T as a side effect (value_preds
        # with GAE, and after_update carries it to slot 0; returns without).
        # The bootstrap is read back from the buffer: it casts next_value to
        # the buffer's dtype, as upstream's loop sees it.
        slot = self._buffer("value_preds" if use_gae else "returns")
        slot[num_steps] = next_value
        self._bootstrap_value = slot[num_steps].clone()

    def return_steps(self) -> RolloutSteps:
        """The ``T`` steps collected, time-major, for a return estimator.

        Raises:
            RuntimeError: if :meth:`compute_returns` was not called for them.
        """
        bootstrap = self._bootstrap_value
        if bootstrap is None:
            raise RuntimeError("return_steps: call compute_returns (the bootstrap value) first")
        num_steps = self.current_rollout_step_idx
        dones = dones_from_next_masks(self._buffer("masks"), num_steps)
        cut = self._truncation(num_steps, dones)
        return RolloutSteps(
            self._buffer("rewards")[:num_steps],
            self._buffer("value_preds")[:num_steps],
            dones,
            bootstrap,
            truncated=cut.get("truncated"),
            truncation_values=cut.get("truncation_values"),
        )

    def store_returns(self, returns: Tensor) -> None:
        """Writes ``buffers["returns"][:T]`` and NaN in every later row (not
        learnt on: out of advantage statistics).

        Shapes:
            returns: ``[T, num_envs, 1]``
        """
        num_steps = self.current_rollout_step_idx
        self._buffer("returns")[:num_steps] = returns
        # PPO's get_advantages normalises over every finite row of the
        # [T + 1, N] buffer; row T and, after a preempted rollout, the rows
        # left from the one before are never learnt on, so NaN keeps them
        # out of the statistics (upstream leaves them in).
        self._buffer("returns")[num_steps:] = float("nan")

    def after_update(self) -> None:
        """Upstream's; the next rollout needs its own bootstrap value."""
        super().after_update()  # type: ignore[no-untyped-call]
        self._bootstrap_value = None
