"""Preallocated shared-memory tensors that env workers and the trainer share.

One row per environment: the worker writes its latest observation, reward and
done into row ``i``, the trainer writes the next action into row ``i`` of
``actions``.  Only the index ``i`` travels through a queue, so no observation is
pickled or allocated per step (VER paper, appendix A).

Fresh buffers hold sentinel values (NaN rewards, ``-1`` / NaN actions) so a
read of a row nobody wrote yet is visible.
"""

from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from gym import spaces
from torch import Tensor


# Scalar info metrics kept per env (habitat tasks report a handful).
MAX_INFO_SCALARS = 32


def _action_buffer(num_envs: int, action_space: spaces.Space) -> Tensor:
    if isinstance(action_space, spaces.Discrete):
        return torch.full((num_envs, 1), -1, dtype=torch.long)
    if isinstance(action_space, spaces.Box):
        return torch.full((num_envs, *action_space.shape), float("nan"))
    raise ValueError(
        f"action space {action_space} is not supported by the VER system: use Discrete or Box"
    )


def _share_memory(tensors: Iterable[Tensor]) -> None:
    """Moves ``tensors`` into shared memory, in place."""
    for tensor in tensors:
        # torch leaves Tensor.share_memory_ unannotated.
        tensor.share_memory_()  # type: ignore[no-untyped-call]


@dataclass
class EnvSharedBuffers:
    """Row ``i`` belongs to env ``i``.

    Attributes:
        observations: sensor name -> ``[N, *shape]`` in the space's dtype.
        rewards: ``[N]`` float32, reward of the env's last step.
        dones: ``[N]`` bool, True when the last step ended the episode (the
            observation is then the first of the next episode).
        actions: ``[N, 1]`` long (Discrete) or ``[N, *shape]`` float (Box).
        infos: ``[N, MAX_INFO_SCALARS]`` float, the scalar metrics of the
            env's info dict (NaN where absent); each worker announces which
            metric its columns hold (:class:`InfoColumns`).
    """

    observations: Dict[str, Tensor]
    rewards: Tensor
    dones: Tensor
    actions: Tensor
    infos: Tensor

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
            infos=torch.full((num_envs, MAX_INFO_SCALARS), float("nan")),
        )
        _share_memory(buffers.tensors())
        return buffers

    def tensors(self) -> Iterator[Tensor]:
        yield from self.observations.values()
        yield self.rewards
        yield self.dones
        yield self.actions
        yield self.infos

    def observation_dicts(self) -> List[Dict[str, "np.ndarray[Any, Any]"]]:
        """Every env's latest observation, as habitat's VectorEnv returns them."""
        num_envs = self.rewards.shape[0]
        return [{k: v[i].numpy() for k, v in self.observations.items()} for i in range(num_envs)]

    def gather(self, ids: Tensor) -> Tuple[Dict[str, Tensor], Tensor, Tensor, Tensor]:
        """Copies of the observation, reward, done and info rows of ``ids``.

        Gathered by numpy, on this thread: torch's indexing of a batch of
        frames is above its parallel grain, so it would wake the trainer's
        intra-op threads, which then spin after each small copy, on the
        cores the env workers step on.
        """
        rows = ids.numpy()
        return (
            {
                key: torch.from_numpy(value.numpy()[rows])
                for key, value in self.observations.items()
            },
            torch.from_numpy(self.rewards.numpy()[rows]),
            torch.from_numpy(self.dones.numpy()[rows]),
            torch.from_numpy(self.infos.numpy()[rows]),
        )

    def row(self, index: int) -> "EnvRow":
        """Env ``index``'s rows, for the worker that steps it."""
        return EnvRow(self, index)


class EnvRow:
    """Env ``index``'s rows of :class:`EnvSharedBuffers` as numpy views.

    A worker reads one action and writes one step result per step.  As
    numpy assignments into views made once, that is a few microseconds;
    through torch (an index, ``as_tensor`` and ``copy_`` per sensor, a
    ``__setitem__`` per scalar) it was tens, each call crossing torch's
    dispatcher: more than the rest of the worker's loop on a fast env.
    """

    def __init__(self, buffers: EnvSharedBuffers, index: int):
        self.index = index
        self.action = buffers.actions[index].numpy()
        self._observations = {
            key: value[index].numpy() for key, value in buffers.observations.items()
        }
        self._rewards = buffers.rewards.numpy()
        self._dones = buffers.dones.numpy()
        self._infos = buffers.infos[index].numpy()

    def write(
        self,
        observation: Dict[str, Any],
        reward: float,
        done: bool,
        info_values: Optional[List[float]] = None,
    ) -> None:
        """Publish the env's step result (casting as torch's ``copy_`` does)."""
        for key, value in observation.items():
            self._observations[key][...] = value
        self._rewards[self.index] = reward
        self._dones[self.index] = done
        self._infos.fill(np.nan)
        if info_values:
            self._infos[: len(info_values)] = info_values


class InfoColumns:
    """Which info metric each column of an env's ``infos`` row holds.

    The worker side calls :meth:`values` on every info dict: it returns the
    row's values and, when the dict brought metric names not seen before,
    the new full name list, which the worker sends once to the trainer.
    """

    def __init__(self) -> None:
        self.names: List[str] = []
        self._column: Dict[str, int] = {}

    def values(self, scalars: Dict[str, float]) -> Tuple[List[float], Optional[List[str]]]:
        grew = False
        for name in sorted(scalars):
            if name not in self._column and len(self.names) < MAX_INFO_SCALARS:
                self._column[name] = len(self.names)
                self.names.append(name)
                grew = True
        row = [float("nan")] * len(self.names)
        for name, value in scalars.items():
            if name in self._column:
                row[self._column[name]] = float(value)
        return row, (list(self.names) if grew else None)


def record_episode_stats(
    stats: Dict[str, Tensor],
    episode_reward: Tensor,
    ids: Tensor,
    rewards: Tensor,
    dones: Tensor,
    infos: Tensor,
    info_names: Sequence[Sequence[str]],
) -> None:
    """Upstream's per-env episode statistics, updated from one step of ``ids``.

    ``episode_reward`` (``[N, 1]``) accumulates each env's running return;
    when an episode ends, ``stats["reward"]`` gets the return, ``stats["count"]``
    one more episode and ``stats[name]`` each info metric of its last step
    (column ``c`` of an env's ``infos`` row holds ``info_names[env][c]``;
    NaN where absent).
    """
    rewards, dones = rewards.view(-1, 1), dones.view(-1, 1).float()
    episode_reward[ids] += rewards
    stats["reward"][ids] += episode_reward[ids] * dones
    stats["count"][ids] += dones
    episode_reward[ids] *= 1.0 - dones
    ended = dones.view(-1).nonzero().view(-1).tolist()
    for row, env in zip(ended, ids[ended].tolist()):
        for column, name in enumerate(info_names[env]):
            value = float(infos[row, column])
            if value == value:  # NaN: the metric was absent this step
                if name not in stats:
                    stats[name] = torch.zeros_like(stats["count"])
                stats[name][env] += value
