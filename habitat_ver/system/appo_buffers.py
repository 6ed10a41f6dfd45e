"""Preallocated trajectory slots shared by APPO's policy worker and learner.

Sample Factory (Petrenko et al. 2020, section 3.3): trajectories live in
tensors allocated once in shared memory; workers pass slot indices, never
data.  Slot ``s`` holds one trajectory of ``T`` steps of one env, plus the
observation after the last step (the learner's bootstrap value).

Fresh slots hold sentinel values (NaN rewards and log-probabilities, ``-1``
versions) so a read of a step nobody wrote is visible.
"""

import queue
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np
import torch
from gym import spaces
from torch import Tensor

from habitat_ver.system.shared_buffers import _action_buffer, _share_memory


@dataclass
class TrajectoryBuffers:
    """``S`` slots of ``T`` steps; index ``[s, t]``.

    Attributes:
        observations: sensor -> ``[S, T + 1, *shape]``; step ``T`` is the
            observation after the last action (bootstrap).
        masks: ``[S, T + 1, 1]`` bool, False where the observation is the
            first of an episode (habitat's convention, for the policy's RNN).
        prev_actions: ``[S, T + 1, *action]``, the action before each step.
        actions: ``[S, T + 1, *action]``; row ``T`` is a valid dummy action
            so the learner evaluates all ``T + 1`` steps in one call.
        behaviour_log_probs: ``[S, T, 1]``, log-probability of the action
            under the policy that acted.
        value_preds: ``[S, T, 1]``, that policy's value of the step (the
            reference of ``rl.ppo.use_clipped_value_loss``).
        rewards: ``[S, T, 1]`` reward after acting at step ``t``.
        dones: ``[S, T, 1]`` bool, True where the episode ended after ``t``.
        truncated: ``[S, T, 1]`` bool, True where that end was a time-limit cut.
        hidden: ``[S, layers, size]``, the recurrent state before step 0.
        versions: ``[S, T]`` long, policy version that chose each action.
        env_ids: ``[S]`` long, the env that filled the slot.
    """

    observations: Dict[str, Tensor]
    masks: Tensor
    prev_actions: Tensor
    actions: Tensor
    behaviour_log_probs: Tensor
    value_preds: Tensor
    rewards: Tensor
    dones: Tensor
    truncated: Tensor
    hidden: Tensor
    versions: Tensor
    env_ids: Tensor

    @classmethod
    def allocate(
        cls,
        num_slots: int,
        num_steps: int,
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        hidden_shape: Tuple[int, ...],
    ) -> "TrajectoryBuffers":
        S, T = num_slots, num_steps
        actions = _action_buffer(S * (T + 1), action_space)
        buffers = cls(
            observations={
                k: torch.from_numpy(np.zeros((S, T + 1, *s.shape), dtype=s.dtype))
                for k, s in observation_space.spaces.items()
            },
            masks=torch.zeros(S, T + 1, 1, dtype=torch.bool),
            prev_actions=actions.view(S, T + 1, *actions.shape[1:]).clone(),
            actions=actions.view(S, T + 1, *actions.shape[1:]).clone(),
            behaviour_log_probs=torch.full((S, T, 1), float("nan")),
            value_preds=torch.full((S, T, 1), float("nan")),
            rewards=torch.full((S, T, 1), float("nan")),
            dones=torch.zeros(S, T, 1, dtype=torch.bool),
            truncated=torch.zeros(S, T, 1, dtype=torch.bool),
            hidden=torch.zeros(S, *hidden_shape),
            versions=torch.full((S, T), -1, dtype=torch.long),
            env_ids=torch.full((S,), -1, dtype=torch.long),
        )
        _share_memory(buffers.tensors())
        return buffers

    @property
    def num_slots(self) -> int:
        return self.rewards.shape[0]

    @property
    def num_steps(self) -> int:
        return self.rewards.shape[1]

    def tensors(self) -> Iterator[Tensor]:
        yield from self.observations.values()
        for name in (
            "masks",
            "prev_actions",
            "actions",
            "behaviour_log_probs",
            "value_preds",
            "rewards",
            "dones",
            "truncated",
            "hidden",
            "versions",
            "env_ids",
        ):
            yield getattr(self, name)

    def insert_first_observations(self, batch: Dict[str, Tensor]) -> None:
        """Upstream's storage contract; nothing to do: the policy worker reads
        the first observations from the env rows and writes each slot's own."""

    def clear(self, slot: int) -> None:
        """Back to sentinels, so a half-written slot is never mistaken for data."""
        self.behaviour_log_probs[slot] = float("nan")
        self.value_preds[slot] = float("nan")
        self.rewards[slot] = float("nan")
        self.versions[slot] = -1
        self.env_ids[slot] = -1

    def batch(self, slots: List[int]) -> Dict[str, Any]:
        """Copies of ``slots``, time-major: ``[T(+1), B, ...]``, hidden ``[B, ...]``."""
        index = torch.tensor(slots, dtype=torch.long)

        def time_major(x: Tensor) -> Tensor:
            return x[index].transpose(0, 1).contiguous()

        return dict(
            observations={k: time_major(v) for k, v in self.observations.items()},
            masks=time_major(self.masks),
            prev_actions=time_major(self.prev_actions),
            actions=time_major(self.actions),
            behaviour_log_probs=time_major(self.behaviour_log_probs),
            value_preds=time_major(self.value_preds),
            rewards=time_major(self.rewards),
            dones=time_major(self.dones),
            truncated=time_major(self.truncated),
            versions=time_major(self.versions),
            hidden=self.hidden[index].clone(),
        )


class SlotPool:
    """Free slot indices; :meth:`take` blocks until one is free."""

    def __init__(self, num_slots: int):
        self._free: "queue.Queue[int]" = queue.Queue()
        for slot in range(num_slots):
            self._free.put(slot)

    def take(self, timeout: Optional[float] = None) -> int:
        return self._free.get(timeout=timeout)

    def give_back(self, slots: List[int]) -> None:
        for slot in slots:
            self._free.put(slot)
