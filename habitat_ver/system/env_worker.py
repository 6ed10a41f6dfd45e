"""The environment worker: one process per env, stepping as soon as told.

Each worker has one duplex pipe to the trainer (:class:`WorkerLink`).  A
command is one byte; the action is read from the shared ``actions`` row and
the result is written to the shared observation/reward/done rows, then the
worker reports READY, also one byte.  So a step's round trip is two one-byte
writes and two reads: no pickling, no queue lock shared by the workers and no
feeder thread to wake (a ``multiprocessing.Queue`` hands every put to one).
Rare reports (spaces, info names, a hang) are pickled ``(kind, i, payload)``
tuples on the same pipe, so they arrive in order with the READYs; an
exception is reported once as ``(FAILED, i, text)`` and ends the worker.
"""

import enum
import os
import threading
import traceback
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
from gym import spaces
from habitat_baselines.utils.info_dict import extract_scalars_from_info

from habitat_ver.system.process_names import ENV_WORKER, name_this_thread
from habitat_ver.system.shared_buffers import EnvRow, EnvSharedBuffers, InfoColumns
from habitat_ver.system.stop_signals import ignore_stop_signals
from habitat_ver.system.trainer_watch import PARENT_CHECK_SECONDS, TrainerWatch, trainer_alive
from habitat_ver.system.worker_threads import use_one_thread


class Command(enum.IntEnum):
    RESET = 0
    STEP = 1
    CLOSE = 2


class Report(enum.IntEnum):
    SPACES = 0  # payload: (observation_space, action_space), once at start
    READY = 1  # env i's row holds a new step result
    FAILED = 2  # payload: the formatted traceback
    INFO_NAMES = 4  # payload: env i's info metric names, sent when they grow
    HUNG = 5  # payload: seconds env i has been inside one step or reset so far


def _as_dict(observation: Any) -> Dict[str, Any]:
    # habitat's EnvObsDictWrapper convention: a bare array becomes {"obs": ...}.
    return observation if isinstance(observation, dict) else {"obs": observation}


def _as_dict_space(space: spaces.Space) -> spaces.Dict:
    return space if isinstance(space, spaces.Dict) else spaces.Dict({"obs": space})


def env_action(action_row: "np.ndarray[Any, Any]", action_space: spaces.Space) -> Any:
    """Shared action row (a numpy view) -> what ``env.step`` takes (a copy:
    the trainer overwrites the row with the next action)."""
    if isinstance(action_space, spaces.Discrete):
        return int(action_row[0])
    return np.clip(action_row, action_space.low, action_space.high)


class EnvStepper:
    """Runs one env against its shared rows (used in-process and in workers).

    Args:
        env: the environment.
        index: its row.
        buffers: the shared rows (set later when they do not exist yet).
        on_info_names: called with the new name list when this env's info
            dict brings metrics not seen before (rare; not per step).
    """

    def __init__(
        self,
        env: Any,
        index: int,
        buffers: Optional[EnvSharedBuffers],
        on_info_names: Callable[[int, List[str]], None] = lambda i, names: None,
    ):
        self.env = env
        self.index = index
        self._row: Optional[EnvRow] = None
        self.buffers = buffers
        self._info_columns = InfoColumns()
        self._on_info_names = on_info_names

    @property
    def buffers(self) -> Optional[EnvSharedBuffers]:
        return self._buffers

    @buffers.setter
    def buffers(self, buffers: Optional[EnvSharedBuffers]) -> None:
        self._buffers = buffers
        self._row = None if buffers is None else buffers.row(self.index)

    @property
    def row(self) -> EnvRow:
        if self._row is None:
            raise RuntimeError(f"env {self.index} has no shared rows yet")
        return self._row

    def spaces(self) -> Tuple[spaces.Dict, spaces.Space]:
        return _as_dict_space(self.env.observation_space), self.env.action_space

    def reset(self) -> None:
        self.row.write(_as_dict(self.env.reset()), 0.0, False)

    def step(self) -> None:
        action = env_action(self.row.action, self.env.action_space)
        observation, reward, done, info = self.env.step(action)
        values, new_names = self._info_columns.values(extract_scalars_from_info(info))
        if new_names is not None:
            self._on_info_names(self.index, new_names)
        if done:
            observation = self.env.reset()
        self.row.write(_as_dict(observation), reward, done, values)


class TrainerGoneError(Exception):
    """The trainer process died, or closed this worker's link, without
    shutting the worker down: there is no one left to report to."""


# What a pipe raises once its other end is closed (or its process is gone).
LINK_CLOSED_ERRORS = (EOFError, BrokenPipeError, ConnectionResetError)


# The one-byte messages of the hot path.  A pickled message is never one byte
# long (it starts with the protocol marker and ends with STOP), so the two
# kinds cannot be confused.
READY_MESSAGE = bytes([Report.READY])
COMMAND_MESSAGES = {c: bytes([c]) for c in Command}
_COMMANDS_BY_MESSAGE = {message: c for c, message in COMMAND_MESSAGES.items()}


def decode_report(index: int, message: bytes) -> Tuple[Report, int, Any]:
    """Trainer side: a message from env ``index``'s pipe as ``(kind, i, payload)``."""
    if message == READY_MESSAGE:
        return Report.READY, index, None
    report: Tuple[Report, int, Any] = ForkingPickler.loads(message)
    return report


def _await_message(conn: Any, trainer_pid: int) -> None:
    """Returns once ``conn`` has a message; raises :class:`TrainerGoneError`
    if the trainer dies first (it is looked at every few seconds)."""
    while not conn.poll(PARENT_CHECK_SECONDS):
        if not trainer_alive(trainer_pid):
            raise TrainerGoneError(f"trainer process {trainer_pid} is gone")


class WorkerLink:
    """A worker's end of its pipe to the trainer (see the module docstring).

    Args:
        conn: the worker's end of a duplex ``multiprocessing`` pipe.
        trainer_pid: the trainer's process; :meth:`receive` raises
            :class:`TrainerGoneError` once it is gone.
    """

    def __init__(self, conn: Any, trainer_pid: int):
        self._conn = conn
        self._trainer_pid = trainer_pid
        # The worker's loop and its TrainerWatch thread both report.
        self._lock = threading.Lock()

    def report(self, kind: Report, index: int, payload: Any = None) -> None:
        if kind == Report.READY:
            message = READY_MESSAGE
        else:
            message = bytes(ForkingPickler.dumps((kind, index, payload)))
        with self._lock:
            try:
                self._conn.send_bytes(message)
            except LINK_CLOSED_ERRORS as error:
                raise TrainerGoneError(f"the trainer closed env {index}'s link") from error

    def receive(self) -> Any:
        """The next command (a :class:`Command`), or the object the trainer sent.

        Workers ignore SIGTERM and SIGINT (the trainer stops them), and a
        forkserver child does not die with the trainer, so a trainer killed
        outright (SIGKILL, an abort in a collective) would leave them waiting
        forever: the wait looks at the trainer every few seconds.
        """
        _await_message(self._conn, self._trainer_pid)
        try:
            message = self._conn.recv_bytes()
        except LINK_CLOSED_ERRORS as error:
            raise TrainerGoneError("the trainer closed this worker's link") from error
        command = _COMMANDS_BY_MESSAGE.get(message)
        return command if command is not None else ForkingPickler.loads(message)


def _next_command(commands: Any, trainer_pid: int) -> Any:
    """The next command from a ``SimpleQueue`` (appo's rollout workers); like
    :meth:`WorkerLink.receive`, raises :class:`TrainerGoneError` once the
    trainer died."""
    # SimpleQueue has no timeout; its reading end (a Connection) can poll.
    _await_message(commands._reader, trainer_pid)
    try:
        return commands.get()
    except LINK_CLOSED_ERRORS as error:
        raise TrainerGoneError("the trainer closed this worker's command queue") from error


def start_watch(
    trainer_pid: int, hang_warning_s: float, report: Callable[[Report, int, Any], None]
) -> TrainerWatch:
    """This worker's :class:`TrainerWatch`, reporting hangs as ``HUNG``."""
    return TrainerWatch(
        trainer_pid,
        hang_warning_s,
        on_hang=lambda i, seconds: report(Report.HUNG, i, seconds),
    ).start()


def init_process(
    index: int,
    make_env: Callable[[], Any],
    conn: Any,
    trainer_pid: int,
    hang_warning_s: float,
) -> None:
    """Entry point of an env worker process.

    Protocol: build the env, report its spaces, receive the shared buffers
    (sized from env 0's spaces) as the first message, then serve commands.

    Args:
        index: this env's row.
        make_env: builds the env (called once, in this process).
        conn: this worker's end of its pipe to the trainer.
        trainer_pid: the trainer's process; the worker exits when it is gone.
        hang_warning_s: a step or reset taking longer is reported (``HUNG``).
    """
    use_one_thread()  # its step copies frames into shared rows
    name_this_thread(f"{ENV_WORKER}-{index}")
    # Ctrl-C and SLURM's signals go to the whole process group: the trainer
    # decides how to stop, and shuts this worker down.
    ignore_stop_signals()
    link = WorkerLink(conn, trainer_pid)
    watch = start_watch(trainer_pid, hang_warning_s, link.report)
    try:
        env = make_env()
        link.report(Report.SPACES, index, EnvStepper(env, index, None).spaces())
        stepper = EnvStepper(
            env,
            index,
            link.receive(),
            on_info_names=lambda i, names: link.report(Report.INFO_NAMES, i, names),
        )
        _serve(stepper, link, watch)
    except TrainerGoneError:
        return
    except Exception:  # noqa: BLE001 - reported to the trainer, which raises
        try:
            link.report(Report.FAILED, index, f"[pid {os.getpid()}] {traceback.format_exc()}")
        except TrainerGoneError:
            return


def _serve(stepper: EnvStepper, link: WorkerLink, watch: TrainerWatch) -> None:
    while True:
        command = link.receive()
        if command == Command.STEP:
            with watch.busy(stepper.index):
                stepper.step()
        elif command == Command.RESET:
            with watch.busy(stepper.index):
                stepper.reset()
        else:
            stepper.env.close()
            return
        link.report(Report.READY, stepper.index)
