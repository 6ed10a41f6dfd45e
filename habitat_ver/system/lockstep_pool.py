"""The ``lockstep`` env pool: habitat's ``VectorEnv``, env failures named, hangs reported.

Upstream's ``VectorEnv`` (one worker process and one pipe per env, used by the
``ddppo`` trainer and by evaluation) has three faults:

* an env that raises kills its worker, which prints its traceback, and the
  trainer then dies on ``EOFError``: four tracebacks, the env never named;
* an env that hangs blocks the trainer in ``recv()`` with no message, and
  neither SIGTERM nor Ctrl-C ends the run (``close()`` waits for the hung
  result too);
* its workers are forkserver children: a trainer killed outright leaves them.

The config's ``habitat_baselines.vector_env_factory``
(:class:`~habitat_ver.envs.factory.VerVectorEnvFactory`) builds a
:class:`LockstepPool`, a :class:`~habitat_ver.system.env_pool.VectorEnvPool`.
It changes only hooks: the worker entry point
(upstream's runs inside it), the read function of each pipe, and ``close``.
An env that raises is reported once, with its index, scenario and traceback,
after every worker was shut down; an env that takes longer than
``hang_warning_s`` in one call is named in a warning, once, and a stop signal
(SIGTERM, SIGUSR1/2) that arrives while an env is overdue ends the run at once;
workers ignore stop signals (the trainer stops them) and exit when the trainer
is gone.

Both it and the in-thread env of upstream's debugging switch
(:class:`ObservedThreadedVectorEnv`) let a trainer observe each step result
as upstream's loop reads it (:meth:`ObservedVectorEnv.observing_steps`):
``ddppo`` records each step's time-limit cuts and metrics with a
:class:`StepRecord` there.
"""

import atexit
import contextlib
import functools
import os
import time
import traceback
import types
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    cast,
)

import torch
from habitat import ThreadedVectorEnv, VectorEnv
from habitat.core.vector_env import CLOSE_COMMAND
from torch import Tensor

from habitat_ver.system import stop_signals
from habitat_ver.system.info_metrics import StepMetrics
from habitat_ver.system.process_names import ENV_WORKER, name_this_thread
from habitat_ver.system.trainer_watch import DEFAULT_HANG_WARNING_S, TrainerWatch
from habitat_ver.system.truncation import truncated_from_info
from habitat_ver.system.worker_processes import (
    CLOSE_GRACE_S,
    EnvWorkerError,
    check_same_spaces,
    end_processes,
    warn_hung,
)
from habitat_ver.system.worker_threads import use_one_thread

# Given (env index, (observations, reward, done, info)) of each step result.
StepObserver = Callable[[int, Any], None]

# Longest wait, in seconds, between two checks of a pending result for a hang
# or a stop request (a result that arrives is read at once).
POLL_SECONDS = 1.0
# An env's first answer waits for its construction (a habitat scene loads for
# tens of seconds): it is overdue only after this many hang_warning_s.
BUILD_WARNING_FACTOR = 5


class EnvHungError(EnvWorkerError):
    """A stop was requested while an env was overdue; the run ends now."""


class _WorkerFailed:
    """What a worker sends instead of a result when its env raised."""

    def __init__(self, details: str):
        self.details = details


def _make_watched_env(make_env_fn: Callable[..., Any], trainer_pid: int, *args: Any) -> Any:
    """The worker's first act: ignore stop signals, watch the trainer, build."""
    stop_signals.ignore_stop_signals()
    TrainerWatch(trainer_pid).start()
    return make_env_fn(*args)


class ObservedVectorEnv(VectorEnv):
    """Upstream's ``VectorEnv`` whose step results can be observed as they are
    read, inside :meth:`observing_steps` (the hook of ``ddppo``'s stepping)."""

    _step_observer: Optional[StepObserver] = None

    @contextlib.contextmanager
    def observing_steps(self, observer: StepObserver) -> Iterator[None]:
        """Every result :meth:`wait_step_at` reads in the block goes to
        ``observer`` first (it may add to the info dict in place)."""
        self._step_observer = observer
        try:
            yield
        finally:
            self._step_observer = None

    def wait_step_at(self, index_env: int) -> Any:
        result = super().wait_step_at(index_env)
        if self._step_observer is not None:
            self._step_observer(index_env, result)
        return result


class ObservedThreadedVectorEnv(ObservedVectorEnv, ThreadedVectorEnv):
    """Upstream's in-thread ``ThreadedVectorEnv`` (``HABITAT_ENV_DEBUG=1``), observable."""


class StepRecord:
    """What the results of one lock-step batch carried, as upstream's loop
    receives them: a :data:`StepObserver`.

    Records whether each env's step was a time-limit cut (:attr:`cuts`), and
    makes every info of the batch hold each scalar metric any of them has
    (:class:`~habitat_ver.system.info_metrics.StepMetrics`).
    """

    def __init__(self) -> None:
        # env index -> True when its step ended its episode at a time limit.
        self.cuts: Dict[int, bool] = {}
        self._metrics = StepMetrics()

    def __call__(self, index: int, result: Any) -> None:
        self.cuts[index] = truncated_from_info(result[3], result[2])
        # Upstream reads the infos once every env of the step is in: after
        # the last one, each info holds every metric of the step.
        self._metrics.add(result[3])

    def truncated(self) -> Tensor:
        """The cuts by env index. ``[n]`` bool"""
        return torch.tensor([self.cuts[i] for i in sorted(self.cuts)])


class LockstepPool(ObservedVectorEnv):
    """Upstream's ``VectorEnv`` with the faults above fixed.

    Args:
        make_env_fn: builds one env from ``env_fn_args[i]`` (in the worker).
        env_fn_args: one argument tuple per env.
        describe: env position -> a short description for messages.
        hang_warning_s: seconds one call of an env may take before a
            warning names it.
        **kwargs: the rest of ``VectorEnv``'s arguments.
    """

    def __init__(
        self,
        make_env_fn: Callable[..., Any],
        env_fn_args: Sequence[Tuple[Any, ...]],
        describe: Callable[[int], str] = str,
        hang_warning_s: float = DEFAULT_HANG_WARNING_S,
        **kwargs: Any,
    ):
        self._describe = describe
        self._hang_warning_s = hang_warning_s
        self._poll_s = min(POLL_SECONDS, hang_warning_s / 4)
        # Envs whose pending result is overdue (warned about); close() kills
        # them without waiting.
        self._overdue: Set[int] = set()
        self._answered: Set[int] = set()  # envs built (their first answer came)
        self._every_pipe: List[Tuple[Any, Any, Any, Any]] = []
        make = functools.partial(_make_watched_env, make_env_fn, os.getpid())
        super().__init__(make, env_fn_args, **kwargs)
        try:
            check_same_spaces(list(zip(self.observation_spaces, self.action_spaces)), describe)
        except EnvWorkerError:
            self.close()
            raise

    # ---------------------------------------------------------------- hooks
    @staticmethod
    def _worker_env(
        connection_read_fn: Callable[[], Any],
        connection_write_fn: Callable[[Any], None],
        env_fn: Callable[..., Any],
        env_fn_args: Tuple[Any, ...],
        auto_reset_done: bool,
        mask_signals: bool = False,
        child_pipe: Any = None,
        parent_pipe: Any = None,
    ) -> None:
        """Upstream's worker loop; an exception goes to the trainer as one
        message (upstream's loop would close the pipe before it could)."""
        use_one_thread()  # the trainer's threads are the learner's
        name_this_thread(ENV_WORKER)
        try:
            VectorEnv._worker_env(
                connection_read_fn,
                connection_write_fn,
                env_fn,
                env_fn_args,
                auto_reset_done,
                mask_signals,
                None,
                parent_pipe,
            )
        except Exception:  # noqa: BLE001 - reported to the trainer, which raises
            connection_write_fn(_WorkerFailed(f"[pid {os.getpid()}] {traceback.format_exc()}"))
        finally:
            if child_pipe is not None:
                child_pipe.close()

    def _spawn_workers(
        self, env_fn_args: Sequence[Tuple[Any, ...]], *args: Any, **kwargs: Any
    ) -> Any:
        read_fns, write_fns = super()._spawn_workers(env_fn_args, *args, **kwargs)
        for read_fn, write_fn, worker in zip(read_fns, write_fns, self._workers):
            # Upstream reads with conn.recv but types read_fn as a plain Callable.
            connection = cast(types.MethodType, read_fn.read_fn).__self__
            read_fn.read_fn = functools.partial(self._receive, read_fn.rank, connection)
            # Kept here whatever pause_at() does with upstream's lists.
            self._every_pipe.append((read_fn, write_fn, connection, worker))
        # Whatever ends the process, close first: multiprocessing's own exit
        # handler only sends SIGTERM, which the workers ignore.
        atexit.register(self.close)
        return read_fns, write_fns

    # ------------------------------------------------------------- reading
    def _receive(self, index: int, connection: Any) -> Any:
        """Env ``index``'s next result; warns once when it is overdue."""
        start = time.monotonic()
        built = index in self._answered
        limit = self._hang_warning_s * (1 if built else BUILD_WARNING_FACTOR)
        while not connection.poll(self._poll_s):
            waited = time.monotonic() - start
            if waited < limit:
                continue
            if index not in self._overdue:
                self._overdue.add(index)
                doing = "inside one step or reset" if built else "being built"
                warn_hung(index, self._describe(index), waited, self._hang_warning_s, doing)
            if stop_signals.stop_requested_locally():
                self._fail(
                    index, f"a stop was requested after it hung for {waited:.1f} s", EnvHungError
                )
        self._overdue.discard(index)
        self._answered.add(index)
        try:
            result = connection.recv()
        except (EOFError, OSError):
            self._fail(index, f"its process exited with code {self._exit_code(index)}")
        if isinstance(result, _WorkerFailed):
            self._fail(index, result.details)
        return result

    def _exit_code(self, index: int) -> Any:
        worker = self._every_pipe[index][3]
        worker.join(timeout=1)
        return worker.exitcode

    def _fail(self, index: int, details: str, error: type = EnvWorkerError) -> None:
        self.close()
        raise error(
            f"environment {index} ({self._describe(index)}) failed; all env workers "
            f"were shut down.\n{details}"
        )

    # ------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Stop every worker, also paused ones; never waits on a hung env for
        longer than ``CLOSE_GRACE_S``, and kills what does not exit."""
        if self._is_closed:
            return
        self._is_closed = True
        atexit.unregister(self.close)
        deadline = time.monotonic() + CLOSE_GRACE_S
        for rank, (read_fn, write_fn, connection, _) in enumerate(self._every_pipe):
            try:
                if read_fn.is_waiting:
                    if rank in self._overdue or not connection.poll(
                        max(0.0, deadline - time.monotonic())
                    ):
                        continue  # still inside a call: killed below
                    connection.recv()
                    read_fn.is_waiting = False
                write_fn((CLOSE_COMMAND, None))
            except (EOFError, OSError, ValueError):
                pass  # its process is gone already
        end_processes([pipe[3] for pipe in self._every_pipe], max(1.0, deadline - time.monotonic()))
        if self._batch_renderer is not None:
            self._batch_renderer.close()


if TYPE_CHECKING:
    from habitat_ver.system.env_pool import VectorEnvPool

    def _conforms(pool: LockstepPool) -> VectorEnvPool:
        """mypy's check that the pool satisfies its kind's protocol (never
        called; the other kinds' builders return theirs)."""
        return pool
