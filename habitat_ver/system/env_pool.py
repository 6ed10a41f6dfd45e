"""What a trainer needs of its environments, whoever steps them.

Three pools stand behind a trainer's ``self.envs``: the lock-step
:class:`~habitat_ver.system.vector_env.GuardedVectorEnv` (``ddppo`` and every
evaluation), VER's :class:`~habitat_ver.system.worker_pool.EnvWorkerPool` and
APPO's :class:`~habitat_ver.system.appo_rollout_worker.RolloutWorkerPool`.
Upstream's ``PPOTrainer`` types the attribute as habitat's ``VectorEnv``, but
what its shared code (and ours) calls on it is only :class:`EnvPool`.  The two
asynchronous pools also share their results through
:class:`~habitat_ver.system.shared_buffers.EnvSharedBuffers`:
:class:`SharedBufferPool`, what a trainer needs to build its policy and
storage from them.

They step asynchronously, each in its own way, and each consumer is typed on
what it calls: VER's collector
(:class:`~habitat_ver.system.ver_collector.VERCollector`) on
:class:`AsyncEnvPool` (envs that step one by one, each as soon as its action
is written), APPO's trainer and policy worker on :class:`AsyncGroupPool`
(groups of envs that step together).  A new pool satisfies one of them (mypy
checks ours below) and needs no change to its consumer.
"""

from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    List,
    Optional,
    Protocol,
    Tuple,
    runtime_checkable,
)

from torch import Tensor

from habitat_ver.system.shared_buffers import EnvSharedBuffers

if TYPE_CHECKING:  # the pools import nothing of this module; only mypy needs them
    from habitat_ver.system.appo_rollout_worker import RolloutWorkerPool
    from habitat_ver.system.vector_env import GuardedVectorEnv
    from habitat_ver.system.worker_pool import EnvWorkerPool


@runtime_checkable
class EnvPool(Protocol):
    """The envs of one trainer: reset them, know how many, shut them down."""

    @property
    def num_envs(self) -> int:
        """Number of envs (this rank's)."""
        ...

    def reset(self) -> List[Any]:
        """Reset every env and wait for all; one observation per env."""
        ...

    def post_step(self, observations: Any) -> Any:
        """habitat's hook on the observations of a step or reset."""
        ...

    def close(self) -> None:
        """Stop every worker; idempotent."""
        ...


@runtime_checkable
class SharedBufferPool(EnvPool, Protocol):
    """A pool whose envs write their results into shared rows."""

    observation_space: Any
    action_space: Any
    # Per env, the info metric held by each column of its `infos` row.
    info_names: List[List[str]]
    buffers: EnvSharedBuffers

    def reset_all(self) -> None:
        """Reset every env; results arrive as the pool reports them."""
        ...


@runtime_checkable
class AsyncEnvPool(SharedBufferPool, Protocol):
    """Envs that step one by one: each steps as soon as its action is written,
    and its result is collected whenever it arrives (VER's collection)."""

    def wait_ready(
        self,
        max_batch: int,
        min_batch: int = 1,
        max_wait_s: float = 0.0,
        timeout: Optional[float] = None,
    ) -> List[int]:
        """Ids of up to ``max_batch`` envs whose new result is in their rows:
        blocks for one (``queue.Empty`` after ``timeout`` s; None: for ever),
        then waits up to ``max_wait_s`` more for ``min_batch`` of them."""
        ...

    def read(self, ids: Tensor) -> Any:
        """Copies of ``(observations, rewards, dones, infos)`` of ``ids``."""
        ...

    def send_actions(self, ids: Tensor, actions: Tensor) -> None:
        """Write ``actions`` into the rows of ``ids``; those envs step."""
        ...


@runtime_checkable
class AsyncGroupPool(SharedBufferPool, Protocol):
    """Envs in groups that step together: a group's actions are written
    into its rows, it steps, and it reports READY once all its results are
    (APPO's double-buffered sampling)."""

    # groups[w][g]: the env rows of group g of worker w.
    groups: List[List[List[int]]]
    # Called first thing when the pool closes (APPO stops its policy worker).
    close_hooks: List[Callable[[], None]]

    def all_groups(self) -> List[Tuple[int, int]]:
        """Every ``(worker, group)``."""
        ...

    def next_report(self, timeout: Optional[float]) -> Tuple[Any, int, Any]:
        """The next ``(Report.READY, worker, group)``; ``queue.Empty`` after
        ``timeout`` s (None: wait for ever)."""
        ...

    def send(self, worker: int, group: int) -> None:
        """The actions of ``group`` of ``worker`` are written: step it."""
        ...


if TYPE_CHECKING:

    def _the_pools_conform(
        ver: "EnvWorkerPool", appo: "RolloutWorkerPool", lockstep: "GuardedVectorEnv"
    ) -> Tuple[EnvPool, EnvPool, EnvPool, SharedBufferPool, SharedBufferPool]:
        """mypy's check that each pool satisfies its protocols (never called)."""
        return ver, appo, lockstep, ver, appo

    def _the_async_pools_conform(
        ver: "EnvWorkerPool", appo: "RolloutWorkerPool"
    ) -> Tuple[AsyncEnvPool, AsyncGroupPool]:
        """The same for the asynchronous protocols (never called)."""
        return ver, appo
