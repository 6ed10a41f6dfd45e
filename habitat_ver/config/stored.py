"""A checkpoint's stored config never chooses which code runs.

habitat-baselines evaluates (and resumes) with the config stored in the
checkpoint when ``habitat_baselines.load_resume_state_config`` is True (the
default), and instantiates its ``_target_`` nodes with Hydra: a checkpoint
whose config says ``vector_env_factory: {_target_: builtins.open, ...}`` would
open (create, truncate) any file.  Loading with ``weights_only`` does not help,
the config is plain data.  So every node of the stored config that names a
``_target_`` is replaced by the current config's node at the same place, and
so are the keys that name modules to import; a gym id in gym's
``module:EnvId`` form (gym imports the module) is refused unless the current
config names the same.  The run's folders and files (:data:`LOCATION_KEYS`)
are the current command's too: a run resumed from a moved or copied folder
goes on where it was resumed from.  The stored config keeps every other
setting.
"""

import copy
from typing import Any, Iterator, List, Tuple

from habitat import logger
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from habitat_ver.config.errors import ConfigError

TARGET_KEY = "_target_"
# Keys, besides `_target_` nodes, whose values name code to import.
IMPORT_KEYS = ("habitat.env_task_gym_dependencies",)
# Where the run's files are: always the current command's, so a run resumed
# from a moved or copied folder goes on there, not in the folder it was
# trained in (upstream took them from the stored config too).
LOCATION_KEYS = (
    "habitat_baselines.checkpoint_folder",
    "habitat_baselines.tensorboard_dir",
    "habitat_baselines.log_file",
    "habitat_baselines.video_dir",
    "habitat_baselines.eval_ckpt_path_dir",
)
# Keys holding gym ids (one or a list); "module:EnvId" makes gym import module.
GYM_ID_KEYS = ("habitat.env_task_gym_id", "habitat_baselines.embedded_env.scenarios")
_ABSENT = object()


class UntrustedConfigError(ConfigError):
    """A stored config names code at a place the current config has none."""


def _target_paths(node: Any, path: str) -> Iterator[Tuple[str, Any]]:
    """(dotted path, stored ``_target_``) of every node naming one, outermost."""
    if isinstance(node, dict):
        if TARGET_KEY in node:
            yield path, node[TARGET_KEY]
            return
        for key, value in node.items():
            yield from _target_paths(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _target_paths(value, f"{path}[{index}]")


def _current_node(current: DictConfig, path: str) -> Any:
    return OmegaConf.select(current, path, default=_ABSENT, throw_on_missing=False)


def _gym_ids(config: DictConfig, key: str) -> List[str]:
    value = _current_node(config, key)
    if value is _ABSENT or value is None:
        return []
    return [str(v) for v in value] if OmegaConf.is_list(value) else [str(value)]


def _check_gym_ids(stored: DictConfig, current: DictConfig) -> None:
    for key in GYM_ID_KEYS:
        allowed = set(_gym_ids(current, key))
        for gym_id in _gym_ids(stored, key):
            if ":" in gym_id and gym_id not in allowed:
                raise UntrustedConfigError(
                    f"{key}={gym_id!r} in the checkpoint's stored config is not "
                    "allowed: the 'module:' part makes gym import that module, and a "
                    "checkpoint cannot choose code to run; set it in this run's "
                    "config or set habitat_baselines.load_resume_state_config=False"
                )


def with_current_code(stored: DictConfig, current: DictConfig) -> DictConfig:
    """``stored`` with its code choices taken from ``current``.

    Args:
        stored: the config read from a checkpoint or resume state.
        current: the config of this run (command line and config files).

    Returns:
        A copy of ``stored`` whose ``_target_`` nodes, :data:`IMPORT_KEYS` and
        :data:`LOCATION_KEYS` are the current config's.

    Raises:
        UntrustedConfigError: ``stored`` names a ``_target_`` at a place where
            ``current`` has no node to take instead, or a ``module:`` gym id
            that ``current`` does not name.
    """
    _check_gym_ids(stored, current)
    plain = OmegaConf.to_container(stored, resolve=False)
    targets: List[Tuple[str, Any]] = list(_target_paths(plain, ""))
    result = copy.deepcopy(stored)
    with read_write(result), open_dict(result):
        for path, stored_target in targets:
            node = _current_node(current, path)
            if node is _ABSENT or not isinstance(node, DictConfig):
                raise UntrustedConfigError(
                    f"{path}._target_={stored_target!r} in the checkpoint's stored "
                    "config is not allowed: a checkpoint cannot choose code to run, "
                    f"and this run's config has no {path} to use instead; set "
                    "habitat_baselines.load_resume_state_config=False"
                )
            current_target = node.get(TARGET_KEY)
            if current_target != stored_target:
                logger.warning(
                    f"ignoring {path}._target_={stored_target!r} from the checkpoint's "
                    f"stored config; using this run's {current_target!r}"
                )
            OmegaConf.update(result, path, copy.deepcopy(node), merge=False)
        for key in IMPORT_KEYS:
            node = _current_node(current, key)
            if node is not _ABSENT and _current_node(result, key) is not _ABSENT:
                OmegaConf.update(result, key, copy.deepcopy(node), merge=False)
        for key in LOCATION_KEYS:
            node, old = _current_node(current, key), _current_node(result, key)
            if node is not _ABSENT and old is not _ABSENT and node != old:
                logger.info(f"{key}: this command's {node!r}, not the stored config's {old!r}")
                OmegaConf.update(result, key, node, merge=False)
    return result
