"""One APPO learner batch as the PPO updater's storage.

:class:`~habitat_ver.updaters.ppo.PPOUpdater` learns from any storage with a
``data_generator(advantages, num_mini_batch)``; this is appo's: the
trajectories copied out of the shared slots
(:meth:`~habitat_ver.system.appo_buffers.TrajectoryBuffers.batch`), split
into minibatches of whole trajectories, each laid out for one packed
recurrent forward over all ``T + 1`` steps (the last one gives V-trace its
bootstrap value; see :class:`~habitat_ver.updaters.targets.VTraceTargets`).
"""

from typing import Any, Callable, Dict, Iterator, Optional

import torch
from habitat_baselines.rl.models.rnn_state_encoder import (
    build_pack_info_from_dones,
    build_rnn_build_seq_info,
)
from torch import Tensor

__all__ = ["TrajectoryBatch"]


class TrajectoryBatch:
    """``B`` trajectories of ``T`` steps, time-major, on the CPU.

    Args:
        batch: what :meth:`TrajectoryBuffers.batch` returned.
        device: where the policy lives (minibatches are moved there).
        obs_transform: upstream's observation transforms; the slots hold raw
            observations (the policy worker applies them only to act).
    """

    def __init__(
        self,
        batch: Dict[str, Any],
        device: torch.device,
        obs_transform: Callable[[Dict[str, Tensor]], Dict[str, Tensor]] = lambda b: b,
    ):
        self.data, self.device, self._transform = batch, device, obs_transform

    @property
    def num_trajectories(self) -> int:
        return int(self.data["masks"].shape[1])

    def data_generator(
        self, advantages: Optional[Tensor], num_mini_batch: int
    ) -> Iterator[Dict[str, Any]]:
        """Minibatches of whole trajectories in a fresh random order.

        Args:
            advantages: unused (V-trace computes them per minibatch), None.
            num_mini_batch: number of minibatches, <= the trajectories; each
                gets ``B // num_mini_batch`` trajectories or one more.

        Yields:
            Dicts with upstream's keys for ``evaluate_actions``
            (``observations``, ``recurrent_hidden_states``, ``prev_actions``,
            ``masks``, ``actions``, ``rnn_build_seq_info``: ``(T + 1) * b``
            rows) and the per-step data of the ``T * b`` learnt steps
            (``action_log_probs``, ``value_preds``: ``[T * b, 1]``;
            ``rewards``, ``dones``, ``truncated``: ``[T, b, 1]``).
        """
        if advantages is not None:
            raise ValueError("appo's minibatches get V-trace advantages, not precomputed ones")
        # tensor_split, not chunk: chunk(4) of 5 trajectories gives 3 pieces.
        order = torch.randperm(self.num_trajectories)
        for mb in order.tensor_split(num_mini_batch):
            yield self._minibatch(mb)

    def _minibatch(self, mb: Tensor) -> Dict[str, Any]:
        data, device = self.data, self.device

        def flat(x: Tensor) -> Tensor:
            return x[:, mb].flatten(0, 1).to(device)

        dones = torch.logical_not(data["masks"][:, mb, 0]).numpy()
        return {
            "observations": self._transform({k: flat(v) for k, v in data["observations"].items()}),
            "recurrent_hidden_states": data["hidden"][mb].to(device),
            "prev_actions": flat(data["prev_actions"]),
            "masks": flat(data["masks"]),
            "actions": flat(data["actions"]),
            "rnn_build_seq_info": build_rnn_build_seq_info(
                device, build_pack_info_from_dones(dones)
            ),
            "action_log_probs": flat(data["behaviour_log_probs"]),
            "value_preds": flat(data["value_preds"]),
            "rewards": data["rewards"][:, mb].to(device),
            "dones": data["dones"][:, mb].to(device),
            "truncated": data["truncated"][:, mb].to(device),
        }
