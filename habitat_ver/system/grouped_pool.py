"""The ``grouped`` env pool: APPO's rollout workers, which only simulate.

Sample Factory (Petrenko et al. 2020, sections 3.1-3.2): each rollout worker
owns ``k`` envs split into groups that it steps alternately (double-buffered
sampling): while the policy worker computes the actions of group 0, the
worker steps group 1, and the other way round, so neither side waits for the
other.  Every env writes its results into its row of the shared
:class:`~habitat_ver.system.shared_buffers.EnvSharedBuffers` (one
:class:`~habitat_ver.system.env_worker.EnvStepper` per env, as VER's env
workers do); only ``(command, group)`` and ``(READY, worker, group)`` cross
the queues.  The pool is an :class:`~habitat_ver.system.env_pool.AsyncGroupPool`.

``serial=True`` runs the workers in the caller's thread: :meth:`send` steps
the group at once and queues the same report a process would.  Shutdown is
total (:meth:`GroupedPool.close`), also after a failure, whose report
names the env index and carries its traceback.
"""

import contextlib
import enum
import os
import queue
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from habitat_ver.system.env_worker import (
    LINK_CLOSED_ERRORS,
    EnvStepper,
    Report,
    TrainerGoneError,
    _next_command,
    start_watch,
)
from habitat_ver.system.process_names import ROLLOUT_WORKER, name_this_thread
from habitat_ver.system.shared_buffers import EnvSharedBuffers
from habitat_ver.system.stop_signals import ignore_stop_signals, worker_context
from habitat_ver.system.trainer_watch import DEFAULT_HANG_WARNING_S
from habitat_ver.system.worker_threads import use_one_thread
from habitat_ver.system.worker_processes import (
    START_TIMEOUT_S,
    EnvWorkerError,
    WorkerProcessPool,
)

# (global env index, zero-argument picklable env builder)
EnvMaker = Tuple[int, Callable[[], Any]]


class Command(enum.IntEnum):
    RESET = 0  # payload unused: reset every env, report every group READY
    STEP = 1  # payload: the group whose actions are written
    CLOSE = 2


class EnvFailedError(Exception):
    """An env of a rollout worker raised; carries its index and traceback."""

    def __init__(self, env_index: int, details: str):
        super().__init__(env_index, details)
        self.env_index = env_index
        self.details = details


def split_groups(env_ids: Sequence[int], num_groups: int) -> List[List[int]]:
    """``env_ids`` in ``num_groups`` contiguous groups of equal size."""
    size = len(env_ids) // num_groups
    return [list(env_ids[g * size : (g + 1) * size]) for g in range(num_groups)]


class RolloutWorker:
    """The envs of one rollout worker, stepped one group at a time.

    Args:
        index: the worker's number.
        envs: ``(global env index, env)`` pairs.
        num_groups: groups stepped alternately.
        on_info_names: see :class:`EnvStepper`.
        watch: marks each env's step as in progress (a worker process's
            :class:`~habitat_ver.system.trainer_watch.TrainerWatch`).
    """

    def __init__(
        self,
        index: int,
        envs: Sequence[Tuple[int, Any]],
        num_groups: int,
        on_info_names: Callable[[int, List[str]], None] = lambda i, names: None,
        watch: Any = None,
    ):
        self.index = index
        self._busy = watch.busy if watch is not None else lambda i: contextlib.nullcontext()
        self.steppers = {
            env_index: EnvStepper(env, env_index, None, on_info_names=on_info_names)
            for env_index, env in envs
        }
        self.groups = split_groups([i for i, _ in envs], num_groups)

    def spaces(self) -> List[Any]:
        """Each env's ``(observation_space, action_space)``, by row."""
        return [stepper.spaces() for stepper in self.steppers.values()]

    def set_buffers(self, buffers: EnvSharedBuffers) -> None:
        for stepper in self.steppers.values():
            stepper.buffers = buffers

    def _run(self, env_ids: Sequence[int], reset: bool) -> None:
        for env_index in env_ids:
            stepper = self.steppers[env_index]
            try:
                with self._busy(env_index):
                    stepper.reset() if reset else stepper.step()
            except Exception as error:
                raise EnvFailedError(env_index, traceback.format_exc()) from error

    def serve(self, command: Command, group: int, report: Callable[[Any], None]) -> None:
        """Run one command; reports each group whose results are written."""
        if command == Command.RESET:
            for g, env_ids in enumerate(self.groups):
                self._run(env_ids, reset=True)
                report((Report.READY, self.index, g))
        else:
            self._run(self.groups[group], reset=False)
            report((Report.READY, self.index, group))

    def close(self) -> None:
        for stepper in self.steppers.values():
            stepper.env.close()


def init_process(
    index: int,
    makers: Sequence[EnvMaker],
    num_groups: int,
    commands: Any,
    reports: Any,
    trainer_pid: int,
    hang_warning_s: float,
) -> None:
    """Entry point of a rollout worker process.

    Protocol: build the envs, report ``(SPACES, worker, spaces)``, receive the
    shared buffers as the first command, then serve ``(Command, group)``
    until CLOSE.  An env that raises is reported once as
    ``(FAILED, env index, traceback)`` and ends the worker; one stuck in a
    step for ``hang_warning_s`` is reported once as ``(HUNG, env index, s)``.
    """
    use_one_thread()  # its steps copy frames into shared rows
    name_this_thread(f"{ROLLOUT_WORKER}-{index}")
    ignore_stop_signals()  # the trainer decides how to stop, and stops us
    watch = start_watch(
        trainer_pid, hang_warning_s, lambda kind, i, payload: reports.put((kind, i, payload))
    )
    current = -1
    try:
        envs = []
        for current, make in makers:
            envs.append((current, make()))
        worker = RolloutWorker(
            index,
            envs,
            num_groups,
            on_info_names=lambda i, names: reports.put((Report.INFO_NAMES, i, names)),
            watch=watch,
        )
        reports.put((Report.SPACES, index, worker.spaces()))
        worker.set_buffers(_next_command(commands, trainer_pid))
        while True:
            command, group = _next_command(commands, trainer_pid)
            if command == Command.CLOSE:
                worker.close()
                return
            worker.serve(command, group, reports.put)
    except TrainerGoneError:
        return
    except EnvFailedError as failure:
        _report_failure(reports, failure.env_index, failure.details)
    except Exception:  # noqa: BLE001 - building env `current` failed
        _report_failure(reports, current, traceback.format_exc())


def _report_failure(reports: Any, env_index: int, details: str) -> None:
    """``(FAILED, env_index, details)``, unless the trainer is gone already."""
    with contextlib.suppress(*LINK_CLOSED_ERRORS):
        reports.put((Report.FAILED, env_index, f"[pid {os.getpid()}] {details}"))


class GroupedPool(WorkerProcessPool):
    """``W`` rollout workers of ``k`` envs each, in processes or in-process.

    Args:
        makers: one ``(global env index, builder)`` per env, in row order;
            worker ``w`` gets rows ``[w * k, (w + 1) * k)``.
        num_workers: ``W``; must divide ``len(makers)``.
        num_groups: groups per worker; must divide ``k``.
        describe: row -> a short description for error messages.
        serial: run the workers in the thread that calls :meth:`send`.
        hang_warning_s: seconds one env step may take before a warning names
            the env (worker processes only).
    """

    WORKERS = "rollout workers"

    def __init__(
        self,
        makers: Sequence[EnvMaker],
        num_workers: int,
        num_groups: int,
        describe: Callable[[int], str] = str,
        serial: bool = False,
        hang_warning_s: float = DEFAULT_HANG_WARNING_S,
    ):
        super().__init__(len(makers), describe, serial, hang_warning_s)
        self.num_workers = num_workers
        # Called first thing in close() (the trainer stops its policy worker).
        self.close_hooks: List[Callable[[], None]] = []
        self._workers: List[RolloutWorker] = []
        per_worker = self.num_envs // num_workers
        chunks = [makers[w * per_worker : (w + 1) * per_worker] for w in range(num_workers)]
        # groups[w][g]: the env rows of group g of worker w.
        self.groups = [split_groups([i for i, _ in chunk], num_groups) for chunk in chunks]
        if serial:
            self._reports: Any = queue.Queue()
            spaces = self._start_serial(chunks, num_groups)
        else:
            spaces = self._start_processes(chunks, num_groups)
        self._share_spaces(spaces)
        if serial:
            for worker in self._workers:
                worker.set_buffers(self.buffers)
        else:
            for commands in self._commands:
                commands.put(self.buffers)

    # ----------------------------------------------------------- start-up
    def _start_serial(self, chunks: Sequence[Sequence[EnvMaker]], num_groups: int) -> Any:
        for w, chunk in enumerate(chunks):
            envs = []
            for env_index, make in chunk:
                try:
                    envs.append((env_index, make()))
                except Exception:  # noqa: BLE001 - named like a worker's failure
                    self._fail(env_index, traceback.format_exc())
            self._workers.append(RolloutWorker(w, envs, num_groups, self._set_info_names))
        return [spaces for worker in self._workers for spaces in worker.spaces()]

    def _start_processes(self, chunks: Sequence[Sequence[EnvMaker]], num_groups: int) -> Any:
        context = worker_context()
        self._reports = context.Queue()
        self._commands = [context.SimpleQueue() for _ in chunks]
        self._close_at_exit()
        for w, chunk in enumerate(chunks):
            self._spawn(
                context,
                init_process,
                (
                    w,
                    list(chunk),
                    num_groups,
                    self._commands[w],
                    self._reports,
                    os.getpid(),
                    self._hang_warning_s,
                ),
                f"habitat_ver-appo-rollout-{w}",
            )
        spaces: Dict[int, Any] = {}
        while len(spaces) < len(chunks):
            _, w, payload = self._next_report_or_fail(
                "while their envs were being built", set(range(len(chunks))) - set(spaces)
            )
            spaces[w] = payload
        return [env_spaces for w in range(len(chunks)) for env_spaces in spaces[w]]

    # ------------------------------------------------------------ messages
    def reset_all(self) -> None:
        """Reset every env; each group then reports READY."""
        for w in range(self.num_workers):
            self._send(w, Command.RESET, -1)

    def reset(self) -> List[Dict[str, Any]]:
        """Reset every env and wait for all; habitat VectorEnv's contract.

        Returns:
            One observation dict (numpy arrays) per env.
        """
        self.reset_all()
        waiting = set(self.all_groups())
        while waiting:
            report = self._next_report_or_fail("while their envs reset", {w for w, _ in waiting})
            waiting.discard(tuple(report[1:]))
        return self.buffers.observation_dicts()

    def all_groups(self) -> List[Tuple[int, int]]:
        """Every ``(worker, group)``."""
        return [(w, g) for w in range(self.num_workers) for g in range(len(self.groups[w]))]

    def send(self, worker: int, group: int) -> None:
        """The actions of ``group`` of ``worker`` are written: step it."""
        self._send(worker, Command.STEP, group)

    def _send(self, worker: int, command: Command, group: int) -> None:
        if self._serial:
            try:
                self._workers[worker].serve(command, group, self._reports.put)
            except EnvFailedError as failure:
                self._reports.put((Report.FAILED, failure.env_index, failure.details))
            return
        self._commands[worker].put((command, group))

    def _next_report_or_fail(self, doing: str, workers: Set[int]) -> Tuple[Any, int, Any]:
        """:meth:`next_report` within ``START_TIMEOUT_S``, else every worker
        is shut down and the silent ``workers`` are named."""
        try:
            return self.next_report(START_TIMEOUT_S)
        except queue.Empty:
            silent = sorted(workers)
            envs = [i for w in silent for group in self.groups[w] for i in group]
            self.close()
            raise EnvWorkerError(
                f"nothing was heard from rollout workers {silent} for "
                f"{START_TIMEOUT_S:.0f} s {doing}; all rollout workers were shut down. "
                f"Their environments: " + ", ".join(f"{i} ({self._describe(i)})" for i in envs)
            ) from None

    def next_report(self, timeout: Optional[float]) -> Tuple[Any, int, Any]:
        """The next ``(Report.READY, worker, group)`` (or SPACES at start-up).

        Raises:
            queue.Empty: nothing arrived within ``timeout``.
            EnvWorkerError: an env failed or a worker died; every worker is
                shut down first.
        """
        while True:
            try:
                report: Tuple[Any, int, Any] = self._reports.get(timeout=timeout)
            except queue.Empty:
                dead = self._first_dead()
                if dead is not None:
                    self._fail(
                        self.groups[dead][0][0],
                        f"rollout worker {dead} exited with code {self._processes[dead].exitcode}",
                    )
                raise
            self._raise_if_failed(report)
            if not self._handled_here(report):
                return report

    # ------------------------------------------------------------ shutdown
    def _before_close(self) -> None:
        for hook in self.close_hooks:
            hook()

    def _close_in_process(self) -> None:
        for worker in self._workers:
            worker.close()

    def _ask_to_stop(self, index: int) -> None:
        self._commands[index].put((Command.CLOSE, -1))

    def _close_channels(self) -> None:
        self._reports.close()
        self._reports.join_thread()
