"""What a trainer needs of its environments, whoever steps them, and the
registry of env pools it asks for them.

A trainer's ``self.envs`` is an env pool of a registered kind, named by the
trainer's ``ENV_POOL`` (:func:`env_pool_kind`):

* ``lockstep`` (``ddppo``, and every evaluation): every env steps at once,
  :class:`~habitat_ver.system.lockstep_pool.LockstepPool`;
* ``per_env`` (``ver``): each env steps on its own as soon as its action is
  written, :class:`~habitat_ver.system.per_env_pool.PerEnvPool`;
* ``grouped`` (``appo``): groups of envs step together,
  :class:`~habitat_ver.system.grouped_pool.GroupedPool`.

Upstream's ``PPOTrainer`` types the attribute as habitat's ``VectorEnv``, but
what its shared code (and ours) calls on it is only :class:`EnvPool`.  Each
consumer is typed on what it calls: upstream's lock-step loop and evaluator on
:class:`VectorEnvPool`; VER's collector
(:class:`~habitat_ver.system.ver_collector.VERCollector`) on
:class:`AsyncEnvPool`; APPO's trainer and policy worker on
:class:`AsyncGroupPool`.  The two asynchronous protocols share their results
through :class:`~habitat_ver.system.shared_buffers.EnvSharedBuffers`
(:class:`SharedBufferPool`, what a trainer needs to build its policy and
storage from them).

Each registered kind says which protocol its pools satisfy (``provides``) and
how one is built from a :class:`PoolSetup` (``build``; none for
``lockstep``, which upstream's ``PPOTrainer._init_envs`` builds with the
config's ``habitat_baselines.vector_env_factory``).  A builder's return type
is that protocol, so mypy checks each pool against it where it is built (the
lock-step module checks its own pool).  A trainer names the protocol its
collection needs (``ENV_POOL_NEEDS``) and is refused a kind that does not
provide it.  A new pool is a class in a file of its own, a builder, and one
:func:`register_env_pool` call in :mod:`habitat_ver.registration`; a trainer
steps it by naming it in ``ENV_POOL``, and nothing else changes.
"""

from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    ContextManager,
    List,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    runtime_checkable,
)

from torch import Tensor

from habitat_ver.common.kind_registry import KindRegistry
from habitat_ver.system.shared_buffers import EnvSharedBuffers

__all__ = [
    "LOCKSTEP",
    "AsyncEnvPool",
    "AsyncGroupPool",
    "EnvPool",
    "PoolKind",
    "PoolSetup",
    "SharedBufferPool",
    "VectorEnvPool",
    "env_pool_kind",
    "env_pool_names",
    "register_env_pool",
    "unregister_env_pool",
]

# The pool of every evaluation (upstream's evaluator steps a VectorEnv).
LOCKSTEP = "lockstep"


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
class VectorEnvPool(EnvPool, Protocol):
    """Envs that step together, as habitat's ``VectorEnv``: what upstream's
    lock-step loop calls (``ddppo``), and the step results observed as it
    reads them (:class:`~habitat_ver.system.lockstep_pool.ObservedVectorEnv`)."""

    def async_step_at(self, index_env: int, action: Any) -> None:
        """Send env ``index_env`` its action; it steps."""
        ...

    def wait_step_at(self, index_env: int) -> Any:
        """That env's ``(observations, reward, done, info)``, once it stepped."""
        ...

    def observing_steps(self, observer: Callable[[int, Any], None]) -> ContextManager[None]:
        """Within the block, each result :meth:`wait_step_at` reads goes to
        ``observer(index_env, result)`` first."""
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


@dataclass(frozen=True)
class PoolSetup:
    """What a pool is built from: this rank's envs of a run.

    Attributes:
        makers: ``(global env index, picklable zero-argument env builder)``
            per env, in row order.
        describe: row -> a short description (global index, scenario) for
            messages.
        hang_warning_s: seconds one env call may take before a warning names
            the env (``habitat_baselines.env_workers.hang_warning_seconds``).
        serial: run the envs in the trainer's process (tests, debugging).
        config: the run's config, for settings of the pool's own.
    """

    makers: Sequence[Tuple[int, Callable[[], Any]]]
    describe: Callable[[int], str]
    hang_warning_s: float
    serial: bool
    config: Any


# setup -> pool; trainers adopt it as upstream's vector env (spaces, no rank-0 keys).
PoolBuilder = Callable[[PoolSetup], SharedBufferPool]


@dataclass(frozen=True)
class PoolKind:
    """One registered kind of env pool.

    Attributes:
        provides: the protocol its pools satisfy (one of this module's).
        build: builds one; None: upstream's ``PPOTrainer._init_envs`` builds
            it with the config's ``habitat_baselines.vector_env_factory``.
    """

    provides: type
    build: Optional[PoolBuilder] = None


_POOLS: KindRegistry[PoolKind] = KindRegistry("env pool")


def register_env_pool(name: str, provides: type, build: Optional[PoolBuilder] = None) -> None:
    """Make ``name`` a pool kind a trainer's ``ENV_POOL`` can name.

    Args:
        name: the kind's name.
        provides: the protocol its pools satisfy; ``build`` returns it.
        build: setup -> pool; None: built by upstream's set-up (see :class:`PoolKind`).

    Raises:
        ValueError: ``name`` is ``auto`` or already registered otherwise.
    """
    _POOLS.register(name, PoolKind(provides, build))


def unregister_env_pool(name: str) -> None:
    """Drop a registered kind (tests registering a toy one clean up with it)."""
    _POOLS.unregister(name)


def env_pool_names() -> Tuple[str, ...]:
    """Registered kinds, in registration order."""
    return _POOLS.names()


def env_pool_kind(name: str, needs: type) -> PoolKind:
    """The kind registered as ``name``, whose pools must satisfy ``needs``.

    Raises:
        KeyError: no kind of that name (the message lists the registered ones).
        TypeError: its pools provide another protocol than ``needs``.
    """
    kind = _POOLS.builder(name)
    if needs not in kind.provides.__mro__:
        raise TypeError(
            f"env pool {name!r} provides {kind.provides.__name__}, and {needs.__name__} "
            f"is needed; kinds providing it: {_providing(needs)}"
        )
    return kind


def _providing(needs: type) -> Tuple[str, ...]:
    """The registered kinds whose pools satisfy ``needs``."""
    return tuple(n for n in env_pool_names() if needs in _POOLS.builder(n).provides.__mro__)
