"""A run's own output folder, where everything it writes beside its
checkpoints goes: its config, its learning curve, and Hydra's files.

It is the log file's folder (``outputs/<config>/`` in our configs); a log file
named without a folder (habitat-baselines' default ``train.log``, written
where the run was started) leaves the working folder alone, and the
checkpoint folder is used instead.

Hydra writes its own log (``hydra.log`` here) and ``.hydra/`` into ``hydra.run.dir``, by default
``outputs/<date>/<time>/`` of the folder the command ran in; our configs set it
to this folder through the resolver :data:`RESOLVER`
(``configs/habitat_baselines/run_folder/own_folder.yaml``).
"""

import os

from omegaconf import OmegaConf

__all__ = ["RESOLVER", "run_folder_of", "register_run_folder_resolver"]

RESOLVER = "habitat_ver_run_folder"


def run_folder_of(log_file: str, checkpoint_folder: str) -> str:
    """The run's folder (absolute) from its ``log_file`` and ``checkpoint_folder``."""
    return os.path.abspath(os.path.dirname(str(log_file)) or str(checkpoint_folder))


def register_run_folder_resolver() -> None:
    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, run_folder_of)
