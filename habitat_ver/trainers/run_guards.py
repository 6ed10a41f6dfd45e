"""What a run checks and cleans up around training and evaluation.

* :func:`check_same_run`: a resume state goes on only under the trainer that
  wrote it and on the same task;
* :func:`check_resume_wanted`: ``load_resume_state_config=False`` is refused
  beside a run's resume state;
* :func:`log_files_closed`: the log file a trainer opened is closed when its
  ``train()`` or ``eval()`` ends;
* :func:`checkpoint_folder_owned`: one live run per checkpoint folder;
* :data:`RUN_ERRORS`: the errors of a run's input that
  ``habitat_baselines.run`` ends with one line, as ``habitat_ver.run`` does.
"""

import contextlib
import logging
from typing import Any, Iterator

from habitat import logger
from habitat_baselines.rl.ddppo.ddp_utils import get_distrib_size
from omegaconf import ListConfig, OmegaConf

from habitat_ver.common.checkpoint import (
    CheckpointsWithoutResumeStateError,
    CorruptCheckpointError,
)
from habitat_ver.common.run_lock import FolderInUseError, FolderLock
from habitat_ver.config.errors import ConfigError

RUN_ERRORS = (
    ConfigError,
    CorruptCheckpointError,
    CheckpointsWithoutResumeStateError,
    FolderInUseError,
)
# What makes a resume state another run's: its trainer or its task.
RUN_IDENTITY_KEYS = (
    "habitat_baselines.trainer_name",
    "habitat.env_task",
    "habitat.env_task_gym_id",
    "habitat_baselines.embedded_env.scenarios",
)


def check_same_run(stored: Any, current: Any) -> None:
    """Refuses to resume the run whose config is ``stored`` under ``current``
    when their :data:`RUN_IDENTITY_KEYS` differ.

    Another trainer's storage and counters ended in an internal error
    mid-start; another task (a config inheriting a shipped one's folders)
    resumed that run's task, since the stored config wins, and reported its
    numbers for the new one.

    Raises:
        ConfigError: naming the key, both values and the way out.
    """
    folder = current.habitat_baselines.checkpoint_folder
    for key in RUN_IDENTITY_KEYS:
        old, new = OmegaConf.select(stored, key), OmegaConf.select(current, key)
        if old is None or new is None:
            continue
        if isinstance(old, ListConfig) or isinstance(new, ListConfig):
            old, new = list(old), list(new)
        if old != new:
            raise ConfigError(
                f"{key}={new!r} is not allowed here: the resume state in "
                f"habitat_baselines.checkpoint_folder={folder!r} is that of a run with "
                f"{key}={old!r}. Resume it with that value, or set "
                "checkpoint_folder (and tensorboard_dir) to new folders"
            )


def check_resume_wanted(current: Any) -> None:
    """Refuses ``habitat_baselines.load_resume_state_config=False`` beside a
    run's resume state (call only when there is one).

    Upstream refuses it too, with a ``FileExistsError`` traceback after the
    envs started: training always resumes with the stored config, so the
    setting would be ignored.

    Raises:
        ConfigError: naming the folder and the ways out.
    """
    baselines = current.habitat_baselines
    if baselines.load_resume_state_config:
        return
    folder = baselines.checkpoint_folder
    raise ConfigError(
        "habitat_baselines.load_resume_state_config=False is not allowed beside the run "
        f"in habitat_baselines.checkpoint_folder={folder!r}: a resumed run keeps its "
        "stored config. Resume it without that setting (its budget, total_num_steps or "
        "num_updates, may be raised from the command line), or start a new run: set "
        "checkpoint_folder (and tensorboard_dir) to new folders, or move that folder away"
    )


@contextlib.contextmanager
def log_files_closed() -> Iterator[None]:
    """Closes the log files habitat's logger got in the block (upstream adds
    ``log_file`` and never removes it: a second trainer in one process also
    wrote into the first one's file)."""
    before = list(logger.handlers)
    try:
        yield
    finally:
        for handler in list(logger.handlers):
            if handler not in before and isinstance(handler, logging.FileHandler):
                logger.removeHandler(handler)
                handler.close()


@contextlib.contextmanager
def checkpoint_folder_owned(config: Any) -> Iterator[None]:
    """Training holds ``habitat_baselines.checkpoint_folder``'s run lock
    (:mod:`habitat_ver.common.run_lock`) for its whole life.

    Only world rank 0 takes it (read from torchrun's or SLURM's variables, as
    upstream does: the process group does not exist yet), so the ranks of one
    run are one owner, and a second run's rank 0 is refused.  Evaluation does
    not come here: it reads the folder and may run beside its training.

    Raises:
        FolderInUseError: before any env starts, naming the folder and its owner.
    """
    if get_distrib_size()[1] != 0:
        yield
        return
    with FolderLock(config.habitat_baselines.checkpoint_folder):
        yield
