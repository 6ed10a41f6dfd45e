"""A run's resolved config in a file of its folder, not on the console.

Upstream's trainer logs the whole config when ``habitat_baselines.verbose`` is
on (its default): ``config: ...`` as training starts and ``env config: ...``
as each checkpoint's evaluation starts, some 450 lines for a HAB skill, which
were most of a run's console.  Our trainers drop those two records
(:func:`upstream_config_dump_dropped`) and write the config to
``config.yaml`` (training) or ``eval_config.yaml`` (evaluation) in the run's
folder (:func:`run_folder`), logging one line that names it
(:func:`write_config_file`).
"""

import contextlib
import logging
import os
from typing import Any, Iterator

from habitat import logger
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from habitat_ver.common.atomic import write_atomically
from habitat_ver.config.run_folder import run_folder_of

TRAIN_FILE = "config.yaml"
EVAL_FILE = "eval_config.yaml"
# How upstream's PPOTrainer starts the two dumps (_init_train, _eval_checkpoint).
_UPSTREAM_DUMPS = ("config: ", "env config: ")


class _DropConfigDump(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg
        return not (
            isinstance(message, str) and message.startswith(_UPSTREAM_DUMPS) and "\n" in message
        )


@contextlib.contextmanager
def upstream_config_dump_dropped() -> Iterator[None]:
    """Within the block, upstream's config dumps are not logged (console and
    log file alike); every other record is."""
    dump_filter = _DropConfigDump()
    logger.addFilter(dump_filter)
    try:
        yield
    finally:
        logger.removeFilter(dump_filter)


def run_folder(baselines: Any) -> str:
    """A run's own output folder (:mod:`habitat_ver.config.run_folder`).

    Args:
        baselines: the ``habitat_baselines`` node of a run's config.
    """
    return run_folder_of(baselines.log_file, baselines.checkpoint_folder)


def config_file_path(baselines: Any, evaluation: bool) -> str:
    """Where a run keeps its config (``baselines``: its ``habitat_baselines`` node)."""
    return os.path.join(run_folder(baselines), EVAL_FILE if evaluation else TRAIN_FILE)


def config_yaml(config: Any) -> str:
    """``config`` as YAML, interpolations resolved where they resolve."""
    try:
        return OmegaConf.to_yaml(config, resolve=True)
    except OmegaConfBaseException:
        return OmegaConf.to_yaml(config)


def write_config_file(config: Any, evaluation: bool = False) -> str:
    """Write ``config`` into the run's folder (atomically) and log one line
    naming the file.

    Returns:
        The file's path.
    """
    path = config_file_path(config.habitat_baselines, evaluation)
    text = config_yaml(config).encode()
    write_atomically(path, lambda out: out.write(text))
    what = "evaluation" if evaluation else "run"
    logger.info(f"habitat_ver: the {what}'s config is in {_shown(path)}")
    return path


def _shown(path: str) -> str:
    """``path`` relative to the working folder when it lies below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative
