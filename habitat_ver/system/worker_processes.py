"""What every pool of env worker processes does, whatever its workers run.

VER's :class:`~habitat_ver.system.per_env_pool.PerEnvPool` (one process per
env, a pipe each) and APPO's
:class:`~habitat_ver.system.grouped_pool.GroupedPool` (one
process per group of envs, queues) differ in how they talk to their workers;
:class:`WorkerProcessPool` holds what they share: starting the processes (or
running the envs in-process), checking that every env has env 0's spaces
before the shared rows are allocated, noticing dead workers, reading the
reports that are the pool's own (a failure, an env's info names, a hang) and
a total, idempotent shutdown.  The lock-step
:class:`~habitat_ver.system.lockstep_pool.LockstepPool` uses the free
functions (:func:`end_processes`, :func:`warn_hung`, :func:`check_same_spaces`).
"""

import atexit
import time
from typing import Any, Callable, List, NoReturn, Optional, Sequence, Tuple, TypeVar

from habitat import logger

from habitat_ver.system.env_worker import Report
from habitat_ver.system.shared_buffers import EnvSharedBuffers

# Seconds a pool waits for a word from workers that are building their envs.
START_TIMEOUT_S = 300.0
# Seconds a worker has to exit after its CLOSE before it is killed.
CLOSE_GRACE_S = 5.0

_Pool = TypeVar("_Pool", bound="WorkerProcessPool")


class EnvWorkerError(RuntimeError):
    """An environment raised; the message names it and carries its traceback."""


def end_processes(processes: Sequence[Any], grace_s: float = CLOSE_GRACE_S) -> None:
    """Join ``processes`` (already told to stop) within ``grace_s`` in all,
    then kill whatever is left: our workers ignore SIGTERM, and one stuck in
    an env call never reads its CLOSE."""
    deadline = time.monotonic() + grace_s
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join()


def check_same_spaces(spaces: Sequence[Tuple[Any, Any]], describe: Callable[[int], str]) -> None:
    """Every env shares env 0's observation and action spaces: one policy and
    one set of shared rows serve them all.

    Args:
        spaces: ``(observation_space, action_space)`` of each env, by row.
        describe: env index -> a short description for the message.

    Raises:
        EnvWorkerError: naming the first env that differs, with both envs' spaces.
    """
    for index, (observation, action) in enumerate(spaces):
        if (observation, action) != tuple(spaces[0]):
            raise EnvWorkerError(
                f"environment {index} ({describe(index)}) has observation space "
                f"{observation} and action space {action}, but environment 0 "
                f"({describe(0)}) has {spaces[0][0]} and {spaces[0][1]}: the envs of a run "
                "must share their spaces (one policy serves them all), so "
                "habitat_baselines.embedded_env.scenarios may only mix envs that do"
            )


def warn_hung(
    env_index: int,
    description: str,
    seconds: float,
    limit_s: float,
    doing: str = "inside one step or reset",
) -> None:
    """One warning per hung step, reset or construction (reported once)."""
    logger.warning(
        f"environment {env_index} ({description}) has been {doing} "
        f"for {seconds:.1f} s (habitat_baselines.env_workers.hang_warning_seconds="
        f"{limit_s:g}); still waiting for it"
    )


class WorkerProcessPool:
    """The process side of a pool whose envs write into shared rows.

    A subclass starts its workers (:meth:`_close_at_exit`, then :meth:`_spawn`
    each), hands :meth:`_share_spaces` the spaces they report,
    and says how one worker is asked to stop (:meth:`_ask_to_stop`), how the
    trainer's ends of the channels close (:meth:`_close_channels`) and how
    in-process envs close (:meth:`_close_in_process`).

    Args:
        num_envs: envs of the pool, one shared row each.
        describe: env index -> a short description for error messages.
        serial: run the envs in this process (no worker processes).
        hang_warning_s: seconds one env call may take before a warning
            names the env (worker processes only).
    """

    # Who is named as shut down when an env fails.
    WORKERS = "env workers"

    observation_space: Any
    action_space: Any
    buffers: EnvSharedBuffers

    def __init__(
        self, num_envs: int, describe: Callable[[int], str], serial: bool, hang_warning_s: float
    ):
        self.num_envs = num_envs
        self._describe = describe
        self._serial = serial
        self._hang_warning_s = hang_warning_s
        self._processes: List[Any] = []
        self._closed = False
        # Per env, the info metric held by each column of its `infos` row.
        self.info_names: List[List[str]] = [[] for _ in range(num_envs)]

    # ----------------------------------------------------------- start-up
    def _close_at_exit(self) -> None:
        """From now on, whatever ends this process closes the pool first:
        multiprocessing's own exit handler only terminates daemons, and our
        workers ignore SIGTERM."""
        atexit.register(self.close)

    def worker_pids(self) -> List[int]:
        """Process ids of the pool's workers (none when it runs in-process)."""
        return [process.pid for process in self._processes]

    def _spawn(
        self, context: Any, target: Callable[..., None], args: Tuple[Any, ...], name: str
    ) -> Any:
        """Start one daemon worker process running ``target(*args)`` in
        ``context`` (:func:`~habitat_ver.system.stop_signals.worker_context`)."""
        process = context.Process(target=target, args=args, daemon=True, name=name)
        process.start()
        self._processes.append(process)
        return process

    def _share_spaces(self, spaces: Sequence[Tuple[Any, Any]]) -> None:
        """Check each env's ``(observation_space, action_space)`` against env
        0's (the pool shuts down if one differs) and allocate the shared rows."""
        try:
            check_same_spaces(spaces, self._describe)
        except EnvWorkerError:
            self.close()
            raise
        self.observation_space, self.action_space = spaces[0]
        self.buffers = EnvSharedBuffers.allocate(self.num_envs, *spaces[0])

    # ------------------------------------------------------------ reports
    def _first_dead(self) -> Optional[int]:
        """The first worker process that is no longer alive, if any."""
        dead = [i for i, process in enumerate(self._processes) if not process.is_alive()]
        return dead[0] if dead else None

    def _raise_if_failed(self, report: Tuple[Any, int, Any]) -> None:
        """``(FAILED, env, traceback)`` shuts the pool down and raises."""
        if report[0] == Report.FAILED:
            self._fail(report[1], report[2])

    def _handled_here(self, report: Tuple[Any, int, Any]) -> bool:
        """True for the reports the pool handles itself: an env's new info
        names (stored) and a hang (one warning)."""
        if report[0] == Report.INFO_NAMES:
            self._set_info_names(report[1], report[2])
            return True
        if report[0] == Report.HUNG:
            warn_hung(report[1], self._describe(report[1]), report[2], self._hang_warning_s)
            return True
        return False

    def _set_info_names(self, index: int, names: List[str]) -> None:
        self.info_names[index] = names

    def _fail(self, index: int, details: str) -> NoReturn:
        self.close()
        raise EnvWorkerError(
            f"environment {index} ({self._describe(index)}) failed; all {self.WORKERS} "
            f"were shut down.\n{details}"
        )

    @staticmethod
    def post_step(observations: Any) -> Any:
        """habitat VectorEnv's hook; nothing to do here."""
        return observations

    # ------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Stop every worker; idempotent, safe after a failure."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        self._before_close()
        if self._serial:
            self._close_in_process()
            return
        for index, process in enumerate(self._processes):
            if process.is_alive():
                try:
                    self._ask_to_stop(index)
                except (OSError, ValueError):
                    pass
        end_processes(self._processes)
        self._close_channels()

    def _before_close(self) -> None:
        """Called first thing in :meth:`close`."""

    def _close_in_process(self) -> None:
        raise NotImplementedError

    def _ask_to_stop(self, index: int) -> None:
        """Send worker ``index`` its CLOSE (it may be gone: OSError, ValueError)."""
        raise NotImplementedError

    def _close_channels(self) -> None:
        """Close the trainer's ends of the workers' channels (all are ended)."""
        raise NotImplementedError

    def __enter__(self: _Pool) -> _Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
