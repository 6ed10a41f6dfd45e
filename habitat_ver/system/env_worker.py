"""The environment worker: one process per env, stepping as soon as told.

Commands arrive as :class:`Command` members on the worker's own queue; the
action is read from the shared ``actions`` row and the result is written to the
shared observation/reward/done rows.  The worker then reports ``(READY, i)`` on
the common result queue.  Nothing but enum members and small ints crosses a
queue on the hot path; an exception is reported once as ``(FAILED, i, text)``
and ends the worker.
"""

import enum
import os
import traceback
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
from gym import spaces
from habitat_baselines.utils.info_dict import extract_scalars_from_info

from habitat_ver.system.shared_buffers import InfoColumns
from habitat_ver.system.stop_signals import ignore_stop_signals
from habitat_ver.system.trainer_watch import PARENT_CHECK_SECONDS, TrainerWatch, trainer_alive


class Command(enum.IntEnum):
    RESET = 0
    STEP = 1
    CLOSE = 2


class Report(enum.IntEnum):
    SPACES = 0  # payload: (observation_space, action_space), once at start
    READY = 1  # env i's row holds a new step result
    FAILED = 2  # payload: the formatted traceback
    CLOSED = 3
    INFO_NAMES = 4  # payload: env i's info metric names, sent when they grow
    HUNG = 5  # payload: seconds env i has been inside one step or reset so far


def _as_dict(observation: Any) -> Dict[str, Any]:
    # habitat's EnvObsDictWrapper convention: a bare array becomes {"obs": ...}.
    return observation if isinstance(observation, dict) else {"obs": observation}


def _as_dict_space(space: spaces.Space) -> spaces.Dict:
    return space if isinstance(space, spaces.Dict) else spaces.Dict({"obs": space})


def env_action(action_row: Any, action_space: spaces.Space) -> Any:
    """Shared-memory action row -> what ``env.step`` takes."""
    if isinstance(action_space, spaces.Discrete):
        return int(action_row[0])
    return np.clip(action_row.numpy(), action_space.low, action_space.high)


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
        buffers: Any,
        on_info_names: Callable[[int, List[str]], None] = lambda i, names: None,
    ):
        self.env = env
        self.index = index
        self.buffers = buffers
        self._info_columns = InfoColumns()
        self._on_info_names = on_info_names

    def spaces(self) -> Tuple[spaces.Dict, spaces.Space]:
        return _as_dict_space(self.env.observation_space), self.env.action_space

    def reset(self) -> None:
        self.buffers.write_step(self.index, _as_dict(self.env.reset()), 0.0, False)

    def step(self) -> None:
        action = env_action(self.buffers.actions[self.index], self.env.action_space)
        observation, reward, done, info = self.env.step(action)
        values, new_names = self._info_columns.values(extract_scalars_from_info(info))
        if new_names is not None:
            self._on_info_names(self.index, new_names)
        if done:
            observation = self.env.reset()
        self.buffers.write_step(self.index, _as_dict(observation), reward, done, values)


class TrainerGoneError(Exception):
    """The trainer process died without shutting this worker down."""


def _next_command(commands: Any, trainer_pid: int) -> Any:
    """The next command; raises :class:`TrainerGoneError` once the trainer died.

    Workers ignore SIGTERM and SIGINT (the trainer stops them), and a
    forkserver child does not die with the trainer, so a trainer killed
    outright (SIGKILL, an abort in a collective) would leave them waiting
    forever.
    """
    # SimpleQueue has no timeout; its reading end (a Connection) can poll.
    while not commands._reader.poll(PARENT_CHECK_SECONDS):
        if not trainer_alive(trainer_pid):
            raise TrainerGoneError(f"trainer process {trainer_pid} is gone")
    return commands.get()


def start_watch(trainer_pid: int, hang_warning_s: float, reports: Any) -> TrainerWatch:
    """This worker's :class:`TrainerWatch`, reporting hangs as ``HUNG``."""
    return TrainerWatch(
        trainer_pid,
        hang_warning_s,
        on_hang=lambda i, seconds: reports.put((Report.HUNG, i, seconds)),
    ).start()


def init_process(
    index: int,
    make_env: Callable[[], Any],
    commands: Any,
    reports: Any,
    trainer_pid: int,
    hang_warning_s: float,
) -> None:
    """Entry point of an env worker process.

    Protocol: build the env, report its spaces, receive the shared buffers
    (sized from env 0's spaces) as the first command, then serve commands.

    Args:
        index: this env's row.
        make_env: builds the env (called once, in this process).
        commands: this worker's command queue.
        reports: the queue shared by all workers.
        trainer_pid: the trainer's process; the worker exits when it is gone.
        hang_warning_s: a step or reset taking longer is reported (``HUNG``).
    """
    # Ctrl-C and SLURM's signals go to the whole process group: the trainer
    # decides how to stop, and shuts this worker down.
    ignore_stop_signals()
    watch = start_watch(trainer_pid, hang_warning_s, reports)
    try:
        env = make_env()
        reports.put((Report.SPACES, index, EnvStepper(env, index, None).spaces()))
        stepper = EnvStepper(
            env,
            index,
            _next_command(commands, trainer_pid),
            on_info_names=lambda i, names: reports.put((Report.INFO_NAMES, i, names)),
        )
        _serve(stepper, commands, reports, trainer_pid, watch)
    except TrainerGoneError:
        return
    except Exception:  # noqa: BLE001 - reported to the trainer, which raises
        reports.put((Report.FAILED, index, f"[pid {os.getpid()}] {traceback.format_exc()}"))


def _serve(
    stepper: EnvStepper, commands: Any, reports: Any, trainer_pid: int, watch: TrainerWatch
) -> None:
    while True:
        command = _next_command(commands, trainer_pid)
        if command == Command.STEP:
            with watch.busy(stepper.index):
                stepper.step()
        elif command == Command.RESET:
            with watch.busy(stepper.index):
                stepper.reset()
        else:
            stepper.env.close()
            reports.put((Report.CLOSED, stepper.index, None))
            return
        reports.put((Report.READY, stepper.index, None))
