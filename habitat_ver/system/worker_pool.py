"""A pool of environment workers that step independently (VER's env side).

``send_actions(ids)`` lets those envs step as soon as their action row is
written; ``wait_ready()`` returns the ids whose results have arrived, whoever
they are: one ``multiprocessing.connection.wait`` over the workers' pipes
(:class:`~habitat_ver.system.env_worker.WorkerLink`) finds every env that
has reported since the last call.  ``serial=True`` runs every env in this
process (tests, debugging): the same rows and the same order of events, no
processes.

Shutdown is total: :meth:`EnvWorkerPool.close` asks every worker to stop,
then terminates and joins whatever is left, so no process outlives the pool,
also after a worker failed (the error names the env, its scenario and the
worker's traceback).
"""

import atexit
import collections
import os
import queue
import time
import traceback
from multiprocessing import connection
from typing import Any, Callable, Deque, Dict, List, NoReturn, Optional, Sequence, Tuple

from habitat import logger
from torch import Tensor

from habitat_ver.system.env_worker import (
    COMMAND_MESSAGES,
    Command,
    EnvStepper,
    Report,
    decode_report,
    init_process,
)
from habitat_ver.system.shared_buffers import EnvSharedBuffers
from habitat_ver.system.stop_signals import worker_context
from habitat_ver.system.trainer_watch import DEFAULT_HANG_WARNING_S

START_TIMEOUT_S = 300.0

# What a worker reports: (kind, env id, payload).
_Report = Tuple[Report, int, Any]


# Seconds a worker has to exit after its CLOSE before it is killed.
CLOSE_GRACE_S = 5.0


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


def stop_worker_processes(
    processes: Sequence[Any], commands: Sequence[Any], close: Any, reports: Any
) -> None:
    """Ask each live worker to stop (``close`` on its command queue), then
    kill whatever has not exited in time; close ``reports``.  Nothing is left
    running, also when a worker hangs or already died."""
    for queue_, process in zip(commands, processes):
        if process.is_alive():
            try:
                queue_.put(close)
            except (OSError, ValueError):
                pass
    end_processes(processes)
    reports.close()
    reports.join_thread()


class EnvWorkerError(RuntimeError):
    """An environment raised; the message names it and carries its traceback."""


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


class EnvWorkerPool:
    """``N`` envs, each stepping in its own process (or in-process if serial).

    Args:
        make_envs: one zero-argument, picklable env builder per env.
        describe: env index -> a short description for error messages.
        serial: run the envs in this process.
        hang_warning_s: seconds one step or reset may take before a warning
            names the env (worker processes only).
    """

    def __init__(
        self,
        make_envs: Sequence[Callable[[], Any]],
        describe: Callable[[int], str] = str,
        serial: bool = False,
        hang_warning_s: float = DEFAULT_HANG_WARNING_S,
    ):
        self.num_envs = len(make_envs)
        self._describe = describe
        self._hang_warning_s = hang_warning_s
        self._serial = serial
        self._ready: Deque[int] = collections.deque()
        self._processes: List[Any] = []
        self._closed = False
        # Per env, the info metric held by each column of its `infos` row.
        self.info_names: List[List[str]] = [[] for _ in make_envs]
        if serial:
            self._steppers = [
                EnvStepper(make(), i, None, on_info_names=self._set_info_names)
                for i, make in enumerate(make_envs)
            ]
            every = [stepper.spaces() for stepper in self._steppers]
        else:
            every = self._start_processes(make_envs)
        try:
            check_same_spaces(every, describe)
        except EnvWorkerError:
            self.close()
            raise
        spaces = every[0]
        self.observation_space, self.action_space = spaces
        self.buffers = EnvSharedBuffers.allocate(self.num_envs, *spaces)
        if serial:
            for stepper in self._steppers:
                stepper.buffers = self.buffers
        else:
            for link in self._links:
                link.send(self.buffers)

    # ----------------------------------------------------------- processes
    def _start_processes(self, make_envs: Sequence[Callable[[], Any]]) -> List[Any]:
        """Start one worker per env; each env's spaces, by row."""
        context = worker_context()
        # The trainer's ends of the workers' pipes, and whose each one is.
        self._links: List[Any] = []
        self._env_of: Dict[Any, int] = {}
        # Whatever ends the process, close first: multiprocessing's own exit
        # handler only terminates daemons, and ours ignore SIGTERM.
        atexit.register(self.close)
        for index, make in enumerate(make_envs):
            ours, theirs = context.Pipe(duplex=True)
            process = context.Process(
                target=init_process,
                args=(index, make, theirs, os.getpid(), self._hang_warning_s),
                daemon=True,
                name=f"habitat_ver-env-{index}",
            )
            process.start()
            # The worker holds its end now: with ours of it closed, a worker
            # that dies shows as end-of-file on its pipe.
            theirs.close()
            self._processes.append(process)
            self._links.append(ours)
            self._env_of[ours] = index
        spaces: Dict[int, Any] = {}
        while len(spaces) < self.num_envs:
            try:
                reports = self._receive(START_TIMEOUT_S)
            except queue.Empty:
                starting = sorted(set(range(self.num_envs)) - set(spaces))
                self._fail(
                    starting[0],
                    f"nothing was heard from environments {starting} for "
                    f"{START_TIMEOUT_S:.0f} s while they were being built",
                )
            for kind, index, payload in reports:
                if kind == Report.SPACES:
                    spaces[index] = payload
        return [spaces[i] for i in range(self.num_envs)]

    def _receive(self, timeout: Optional[float]) -> List[_Report]:
        """One report from each worker that has sent one, waiting up to
        ``timeout`` (None: for ever) for the first.

        Raises:
            EnvWorkerError: a worker reported a failure, or died.
            queue.Empty: nothing arrived within ``timeout``.
        """
        arrived = connection.wait(self._links, timeout)
        if not arrived:
            dead = [i for i, p in enumerate(self._processes) if not p.is_alive()]
            if dead:
                self._fail_dead(dead[0])
            raise queue.Empty
        reports = []
        for link in arrived:
            index = self._env_of[link]
            try:
                message = self._links[index].recv_bytes()
            except (EOFError, OSError):
                self._fail_dead(index)
            report = decode_report(index, message)
            if report[0] == Report.FAILED:
                self._fail(report[1], report[2])
            reports.append(report)
        return reports

    def _fail_dead(self, index: int) -> NoReturn:
        process = self._processes[index]
        process.join(timeout=1.0)
        self._fail(index, f"its process exited with code {process.exitcode}")

    def _set_info_names(self, index: int, names: List[str]) -> None:
        self.info_names[index] = names

    def _collect_ready(self, timeout: Optional[float]) -> None:
        """Appends the envs that reported READY to the ready queue, waiting up
        to ``timeout`` for the first report (``queue.Empty`` if none)."""
        for report in self._receive(timeout):
            index = self._handle_report(report)
            if index is not None:
                self._ready.append(index)

    def _handle_report(self, report: _Report) -> Optional[int]:
        """The report's env id, or None for reports handled here (info names, hangs)."""
        if report[0] == Report.INFO_NAMES:
            self._set_info_names(report[1], report[2])
            return None
        if report[0] == Report.HUNG:
            warn_hung(report[1], self._describe(report[1]), report[2], self._hang_warning_s)
            return None
        return report[1]

    def _fail(self, index: int, details: str) -> NoReturn:
        self.close()
        raise EnvWorkerError(
            f"environment {index} ({self._describe(index)}) failed; all env "
            f"workers were shut down.\n{details}"
        )

    # -------------------------------------------------------------- stepping
    def _command(self, ids: Sequence[int], command: Command) -> None:
        if self._serial:
            for i in ids:
                stepper = self._steppers[i]
                try:
                    stepper.step() if command == Command.STEP else stepper.reset()
                except Exception:  # noqa: BLE001 - reported like a worker's
                    self._fail(i, traceback.format_exc())
                self._ready.append(i)
            return
        message = COMMAND_MESSAGES[command]
        for i in ids:
            self._links[i].send_bytes(message)

    def reset_all(self) -> None:
        """Reset every env; results arrive through :meth:`wait_ready`."""
        self._command(range(self.num_envs), Command.RESET)

    def reset(self) -> List[Dict[str, Any]]:
        """Reset every env and wait for all; habitat VectorEnv's contract.

        Returns:
            One observation dict (numpy arrays) per env.
        """
        self.reset_all()
        waiting = set(range(self.num_envs))
        while waiting:
            waiting -= set(self.wait_ready(self.num_envs))
        return self.buffers.observation_dicts()

    @staticmethod
    def post_step(observations: Any) -> Any:
        """habitat VectorEnv's hook; nothing to do here."""
        return observations

    def send_actions(self, ids: Tensor, actions: Tensor) -> None:
        """Write ``actions`` into the rows of ``ids`` and let those envs step."""
        ids_list = ids.tolist()
        self.buffers.actions[ids] = actions.to(self.buffers.actions.dtype).view(
            len(ids_list), *self.buffers.actions.shape[1:]
        )
        self._command(ids_list, Command.STEP)

    def wait_ready(
        self,
        max_batch: int,
        min_batch: int = 1,
        max_wait_s: float = 0.0,
        timeout: Optional[float] = None,
    ) -> List[int]:
        """Ids with a new result: blocks for one, then takes what has arrived,
        waiting up to ``max_wait_s`` more for ``min_batch`` of them (bigger
        inference batches amortise the policy's per-call cost).

        Results not returned (beyond ``max_batch``) stay queued, in order.
        """
        if not self._serial:
            # Block until some env is ready (a report may be a hang warning
            # or new info names only): every env that reported comes at once.
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self._ready:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                self._collect_ready(left)
            deadline = time.monotonic() + max_wait_s
            while len(self._ready) < min_batch and (left := deadline - time.monotonic()) > 0:
                try:
                    self._collect_ready(left)
                except queue.Empty:
                    break
        if not self._ready:
            raise RuntimeError("wait_ready: no env is stepping")
        count = min(max_batch, len(self._ready))
        return [self._ready.popleft() for _ in range(count)]

    def push_back(self, ids: Sequence[int]) -> None:
        """Return ready ids that the caller could not use yet (kept first)."""
        self._ready.extendleft(reversed(list(ids)))

    def read(self, ids: Tensor) -> Any:
        """Copies of the observations, rewards, dones and info rows of ``ids``."""
        obs = {k: v[ids] for k, v in self.buffers.observations.items()}
        return (
            obs,
            self.buffers.rewards[ids].clone(),
            self.buffers.dones[ids].clone(),
            self.buffers.infos[ids].clone(),
        )

    # -------------------------------------------------------------- shutdown
    def close(self) -> None:
        """Stop every worker; idempotent, safe after a failure."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        if self._serial:
            for stepper in self._steppers:
                stepper.env.close()
            return
        close = COMMAND_MESSAGES[Command.CLOSE]
        for link, process in zip(self._links, self._processes):
            if process.is_alive():
                try:
                    link.send_bytes(close)
                except (OSError, ValueError):
                    pass
        end_processes(self._processes)
        for link in self._links:
            link.close()

    def __enter__(self) -> "EnvWorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
