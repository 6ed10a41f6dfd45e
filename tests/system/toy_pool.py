"""A toy env pool, all in one file: every env in this process, each stepped
at once when its action is written, the last row first.

What a new pool needs: a class with the members of the protocol it provides
(here :class:`~habitat_ver.system.env_pool.AsyncEnvPool`, what VER's
collector steps), a builder from a
:class:`~habitat_ver.system.env_pool.PoolSetup` that returns that protocol,
and one ``register_env_pool`` call (made by the test).
"""

from typing import Any, Dict, List, Optional

from torch import Tensor

from habitat_ver.system.env_pool import AsyncEnvPool, PoolSetup
from habitat_ver.system.env_worker import EnvStepper
from habitat_ver.system.shared_buffers import EnvSharedBuffers


class ToyPool:
    """The envs of ``setup.makers``, stepped in ``send_actions`` (in reverse
    row order); counts the env steps it ran."""

    def __init__(self, setup: PoolSetup):
        self.setup = setup
        self.num_envs = len(setup.makers)
        self.info_names: List[List[str]] = [[] for _ in range(self.num_envs)]
        self._steppers = [
            EnvStepper(make(), row, None, on_info_names=self._set_info_names)
            for row, (_, make) in enumerate(setup.makers)
        ]
        self.observation_space, self.action_space = self._steppers[0].spaces()
        self.buffers = EnvSharedBuffers.allocate(
            self.num_envs, self.observation_space, self.action_space
        )
        for stepper in self._steppers:
            stepper.buffers = self.buffers
        self._ready: List[int] = []
        self.steps = 0
        self.closed = False

    def _set_info_names(self, row: int, names: List[str]) -> None:
        self.info_names[row] = names

    def reset_all(self) -> None:
        for stepper in self._steppers:
            stepper.reset()
        self._ready = list(range(self.num_envs))

    def reset(self) -> List[Dict[str, Any]]:
        self.reset_all()
        self._ready = []
        return self.buffers.observation_dicts()

    def post_step(self, observations: Any) -> Any:
        return observations

    def send_actions(self, ids: Tensor, actions: Tensor) -> None:
        rows = ids.tolist()
        self.buffers.actions[ids] = actions.to(self.buffers.actions.dtype).view(
            len(rows), *self.buffers.actions.shape[1:]
        )
        for row in reversed(rows):
            self._steppers[row].step()
            self._ready.append(row)
        self.steps += len(rows)

    def wait_ready(
        self,
        max_batch: int,
        min_batch: int = 1,
        max_wait_s: float = 0.0,
        timeout: Optional[float] = None,
    ) -> List[int]:
        if not self._ready:
            raise RuntimeError("wait_ready: no env is stepping")
        taken, self._ready = self._ready[:max_batch], self._ready[max_batch:]
        return taken

    def read(self, ids: Tensor) -> Any:
        return self.buffers.gather(ids)

    def close(self) -> None:
        if not self.closed:
            for stepper in self._steppers:
                stepper.env.close()
        self.closed = True


def toy_pool(setup: PoolSetup) -> AsyncEnvPool:
    """The toy kind's builder."""
    return ToyPool(setup)
