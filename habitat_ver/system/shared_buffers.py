"""Preallocated shared-memory tensors that env workers and the trainer share.

One row per environment: the worker writes its latest observation, reward and
done into row ``i``, the trainer writes the next action into row ``i`` of
``actions``.  Only the index ``i`` travels through a queue, so no observation is
pickled or allocated per step (VER paper, appendix A).

Fresh buffers hold sentinel values (NaN rewards, ``-1`` / NaN actions) so a
read of a row nobody wrote yet is visible.
"""

from dataclasses import dataclass
from typing import Dict

import numpy as np
import torch
from gym import spaces
from torch import Tensor


def _action_buffer(num_envs: int, action_space: spaces.Space) -> Tensor:
    if isinstance(action_space, spaces.Discrete):
        return torch.full((num_envs, 1), -1, dtype=torch.long)
    if isinstance(action_space, spaces.Box):
        return torch.full((num_envs, *action_space.shape), float("nan"))
    raise ValueError(
        f"action space {action_space} is not supported by the VER system: "
        "use Discrete or Box"
    )


@dataclass
class EnvSharedBuffers:
    """Row ``i`` belongs to env ``i``.

    Attributes:
        observations: sensor name -> ``[N, *shape]`` in the space's dtype.
        rewards: ``[N]`` float32, reward of the env's last step.
        dones: ``[N]`` bool, True when the last step ended the episode (the
            observation is then the first of the next episode).
        actions: ``[N, 1]`` long (Discrete) or ``[N, *shape]`` float (Box).
    """

    observations: Dict[str, Tensor]
    rewards: Tensor
    dones: Tensor
    actions: Tensor

    @classmethod
    def allocate(
        cls, num_envs: int, observation_space: spaces.Dict, action_space: spaces.Space
    ) -> "EnvSharedBuffers":
        observations = {
            key: torch.from_numpy(np.zeros((num_envs, *space.shape), dtype=space.dtype))
            for key, space in observation_space.spaces.items()
        }
        buffers = cls(
            observations=observations,
            rewards=torch.full((num_envs,), float("nan")),
            dones=torch.zeros(num_envs, dtype=torch.bool),
            actions=_action_buffer(num_envs, action_space),
        )
        for tensor in buffers.tensors():
            tensor.share_memory_()
        return buffers

    def tensors(self):
        yield from self.observations.values()
        yield self.rewards
        yield self.dones
        yield self.actions

    def write_step(self, index: int, observation: Dict, reward: float, done: bool) -> None:
        """Worker side: publish env ``index``'s step result."""
        for key, value in observation.items():
            self.observations[key][index].copy_(torch.as_tensor(np.asarray(value)))
        self.rewards[index] = float(reward)
        self.dones[index] = bool(done)
