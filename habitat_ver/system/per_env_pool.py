"""The ``per_env`` env pool: each env steps on its own, in its own process.

VER's env side, an :class:`~habitat_ver.system.env_pool.AsyncEnvPool`:
``send_actions(ids)`` lets those envs step as soon as their action row is
written; ``wait_ready()`` returns the ids whose results have arrived, whoever
they are: one ``poll`` over the workers' pipes
(:class:`~habitat_ver.system.env_worker.WorkerLink`) finds every env that
has reported since the last call.  ``serial=True`` runs every env in this
process (tests, debugging): the same rows and the same order of events, no
processes.

Shutdown is total: :meth:`PerEnvPool.close` asks every worker to stop,
then terminates and joins whatever is left, so no process outlives the pool,
also after a worker failed (the error names the env, its scenario and the
worker's traceback).  What it shares with the ``grouped`` pool (start-up, liveness,
hang warnings, shutdown) is :class:`~habitat_ver.system.worker_processes.WorkerProcessPool`'s.
"""

import collections
import os
import queue
import select
import time
import traceback
from typing import Any, Callable, Deque, Dict, List, NoReturn, Optional, Sequence, Tuple

from torch import Tensor

from habitat_ver.system.env_worker import (
    COMMAND_MESSAGES,
    Command,
    EnvStepper,
    Report,
    decode_report,
    init_process,
)
from habitat_ver.system.stop_signals import worker_context
from habitat_ver.system.trainer_watch import DEFAULT_HANG_WARNING_S
from habitat_ver.system.worker_processes import (
    START_TIMEOUT_S,
    EnvWorkerError,
    WorkerProcessPool,
)

__all__ = ["EnvWorkerError", "PerEnvPool", "START_TIMEOUT_S"]

# What a worker reports: (kind, env id, payload).
_Report = Tuple[Report, int, Any]


class PerEnvPool(WorkerProcessPool):
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
        super().__init__(len(make_envs), describe, serial, hang_warning_s)
        self._ready: Deque[int] = collections.deque()
        if serial:
            self._steppers = [
                EnvStepper(make(), i, None, on_info_names=self._set_info_names)
                for i, make in enumerate(make_envs)
            ]
            every = [stepper.spaces() for stepper in self._steppers]
        else:
            every = self._start_processes(make_envs)
        self._share_spaces(every)
        if serial:
            for stepper in self._steppers:
                stepper.buffers = self.buffers
        else:
            for link in self._links:
                link.send(self.buffers)

    # ----------------------------------------------------------- processes
    def _start_processes(self, make_envs: Sequence[Callable[[], Any]]) -> List[Any]:
        """Start one worker per env; each env's spaces, by row."""
        # The trainer's ends of the workers' pipes, and whose each one is.
        self._links: List[Any] = []
        # One poll set over every pipe, built once: each wait is then one
        # system call, where multiprocessing's connection.wait registers
        # every pipe again (tens of microseconds per pipe and call).
        self._poller = select.poll()
        self._env_of_fd: Dict[int, int] = {}
        context = worker_context()
        self._close_at_exit()
        for index, make in enumerate(make_envs):
            ours, theirs = context.Pipe(duplex=True)
            self._spawn(
                context,
                init_process,
                (index, make, theirs, os.getpid(), self._hang_warning_s),
                f"habitat_ver-env-{index}",
            )
            # The worker holds its end now: with ours of it closed, a worker
            # that dies shows as end-of-file on its pipe.
            theirs.close()
            self._links.append(ours)
            self._poller.register(ours.fileno(), select.POLLIN)
            self._env_of_fd[ours.fileno()] = index
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
        arrived = self._poller.poll(None if timeout is None else 1000.0 * timeout)
        if not arrived:
            dead = self._first_dead()
            if dead is not None:
                self._fail_dead(dead)
            raise queue.Empty
        reports = []
        for fd, _ in arrived:
            index = self._env_of_fd[fd]
            try:
                message = self._links[index].recv_bytes()
            except (EOFError, OSError):
                self._fail_dead(index)
            report = decode_report(index, message)
            self._raise_if_failed(report)
            reports.append(report)
        return reports

    def _fail_dead(self, index: int) -> NoReturn:
        process = self._processes[index]
        process.join(timeout=1.0)
        self._fail(index, f"its process exited with code {process.exitcode}")

    def _collect_ready(self, timeout: Optional[float]) -> None:
        """Appends the envs that reported READY to the ready queue, waiting up
        to ``timeout`` for the first report (``queue.Empty`` if none)."""
        for report in self._receive(timeout):
            if not self._handled_here(report):
                self._ready.append(report[1])

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
        return self.buffers.gather(ids)

    # -------------------------------------------------------------- shutdown
    def _close_in_process(self) -> None:
        for stepper in self._steppers:
            stepper.env.close()

    def _ask_to_stop(self, index: int) -> None:
        self._links[index].send_bytes(COMMAND_MESSAGES[Command.CLOSE])

    def _close_channels(self) -> None:
        for link in self._links:
            link.close()
