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
"""

from typing import TYPE_CHECKING, Any, List, Protocol, Tuple, runtime_checkable

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


if TYPE_CHECKING:

    def _the_pools_conform(
        ver: "EnvWorkerPool", appo: "RolloutWorkerPool", lockstep: "GuardedVectorEnv"
    ) -> Tuple[EnvPool, EnvPool, EnvPool, SharedBufferPool, SharedBufferPool]:
        """mypy's check that each pool satisfies its protocols (never called)."""
        return ver, appo, lockstep, ver, appo
