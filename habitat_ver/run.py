"""``python -m habitat_ver.run``: habitat_baselines.run's command line, plus
clear errors.

The command line is exactly upstream's (``--config-name=...``, Hydra
overrides, ``habitat_baselines.evaluate=True``); the difference is that
importing :mod:`habitat_ver` first enables sim-free mode and registers our
trainers, and that a config habitat-ver cannot run ends the process with one
line on stderr and exit status 2 instead of a traceback; so do Hydra's own
errors (an override of a key that does not exist, a malformed override, an
unknown config name).
"""

import os
import random
import sys
from typing import Any, Optional, Sequence

import habitat_ver  # noqa: F401  (sim-free mode + registration, before habitat)

import hydra
import numpy as np
import torch
from habitat.config.default import patch_config
from habitat.config.default_structured_configs import register_hydra_plugin
from habitat_baselines.common.baseline_registry import baseline_registry
from habitat_baselines.config.default_structured_configs import (
    HabitatBaselinesConfigPlugin,
)
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf.errors import OmegaConfBaseException

from habitat_ver.common import filtered_console
from habitat_ver.common.atomic import FileWriteError
from habitat_ver.common.checkpoint import (
    CheckpointsWithoutResumeStateError,
    CorruptCheckpointError,
)
from habitat_ver.common.run_lock import FolderInUseError
from habitat_ver.common.usage import exit_interrupted
from habitat_ver.compat.sim_free import HabitatSimRequiredError
from habitat_ver.config.config_name_hint import unknown_config_line
from habitat_ver.config.errors import ConfigError
from habitat_ver.config.search_path import ConfigTreeSearchPath
from habitat_ver.system.worker_processes import EnvWorkerError

# Errors that mean "this run cannot start as configured": reported in one line.
USER_ERRORS = (
    ConfigError,
    HabitatSimRequiredError,
    CorruptCheckpointError,
    CheckpointsWithoutResumeStateError,
    FolderInUseError,  # another live run's checkpoint folder
    FileNotFoundError,
    FileExistsError,  # upstream: load_resume_state_config=False beside a run
    OmegaConfBaseException,
)
USAGE_EXIT_CODE = 2
ENV_FAILURE_EXIT_CODE = 1
# How Hydra's message for an unknown --config-name starts.
PRIMARY_MISSING = "Cannot find primary config"


class UnknownTrainerError(ConfigError):
    """``habitat_baselines.trainer_name`` names no registered trainer."""


def get_trainer_class(name: str) -> Any:
    """The trainer class registered as ``name``, or a clear error."""
    trainer = baseline_registry.get_trainer(name)
    if trainer is None:
        known = sorted(baseline_registry.mapping["trainer"])
        raise UnknownTrainerError(
            f"habitat_baselines.trainer_name={name!r} is not allowed: "
            f"registered trainers are {known}"
        )
    return trainer


def execute_exp(config: Any, run_type: str) -> Any:
    """Seed, build the trainer and train or evaluate (upstream's contract).

    Returns:
        The trainer, so callers (tests, notebooks) can inspect the run.
    """
    random.seed(config.habitat.seed)
    np.random.seed(config.habitat.seed)
    torch.manual_seed(config.habitat.seed)
    trainer = get_trainer_class(config.habitat_baselines.trainer_name)(config)
    if run_type == "train":
        trainer.train()
    else:
        trainer.eval()
    return trainer


def _one_line(error: BaseException) -> str:
    """The error's message and its cause's (Hydra keeps the reason there), on
    one line: Hydra and OmegaConf messages span several."""
    if isinstance(error, MissingConfigException) and str(error).startswith(PRIMARY_MISSING):
        return unknown_config_line(str(error.missing_cfg_file))
    parts = [str(error)]
    if isinstance(error, OverrideParseException) and error.override not in str(error):
        parts.insert(0, f"cannot parse the override {error.override!r}")
    elif isinstance(error, HydraException) and error.__cause__ is not None:
        parts.append(str(error.__cause__))
    lines = [line.strip() for part in parts for line in part.splitlines()]
    # Hydra underlines the bad character with a caret line: meaningless on one line.
    return "; ".join(line for line in lines if line.strip("^ "))


def _fail(error: BaseException) -> None:
    print(f"habitat_ver.run: error: {_one_line(error)}", file=sys.stderr)
    sys.exit(USAGE_EXIT_CODE)


@hydra.main(version_base=None, config_path=None, config_name=None)
def _hydra_main(cfg: Any) -> None:
    # Hydra reports exceptions raised in here itself (traceback, exit 1);
    # configuration mistakes are caught first and reported in one line.
    try:
        cfg = patch_config(cfg)
        execute_exp(cfg, "eval" if cfg.habitat_baselines.evaluate else "train")
    except USER_ERRORS as error:
        _fail(error)
    except (EnvWorkerError, FileWriteError) as error:
        # The env and its worker's traceback; or the file a full disk or a
        # read-only folder refused, where a traceback adds nothing.
        print(f"habitat_ver.run: {error}", file=sys.stderr)
        sys.exit(ENV_FAILURE_EXIT_CODE)
    except KeyboardInterrupt:
        # The trainer already shut its env workers down (train()'s finally).
        exit_interrupted("habitat_ver.run")


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m habitat_ver.run`` and ``habitat-ver-run``."""
    # Started at `import habitat_ver` where Python says how it was started
    # (3.10+); on 3.9 from here (a no-op when filtering already, or in-process).
    filtered_console.filter_command_line_noise()
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    named = any(a.startswith(("--config-name", "-cn")) for a in sys.argv[1:])
    if not named and not {"--help", "-h", "--info"} & set(sys.argv[1:]):
        _fail(
            ValueError(
                "--config-name=<config> is required, e.g. --config-name=doom/ddppo_my_way_home"
            )
        )
    register_hydra_plugin(HabitatBaselinesConfigPlugin)
    register_hydra_plugin(ConfigTreeSearchPath)
    # Hydra prints its own errors (several lines, exit 1) unless this is set;
    # then it raises them, and they are reported like ours.
    before = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        _hydra_main()
    except (HydraException, OmegaConfBaseException) as error:
        _fail(error)
    finally:
        if before is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = before


if __name__ == "__main__":
    main()
