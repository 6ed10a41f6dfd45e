"""Writing and reading checkpoints and resume states safely.

Three upstream faults are fixed here:

* writes are atomic (temporary file in the same folder, fsync, rename), so a
  crash mid-write never leaves a truncated file under the real name;
* our files store the config as plain containers, and every file is read with
  ``torch.load(weights_only=True)``; upstream-format files that pickle an
  OmegaConf config (habitat-baselines skill checkpoints) load through an
  allow-list of config types only (upstream issue #2236: on torch >= 2.6 a plain
  ``torch.load`` of those fails);
* a truncated or corrupt file is reported with its path, and the resume state
  keeps the previous good copy to fall back on; when no copy is readable, or
  there is none beside the folder's ``ckpt.<n>.pth`` files, the run refuses to
  start rather than silently starting over from step 0 and overwriting them;
* our files carry a checksum of their payload (:mod:`.checksum`), so bit-flipped
  tensor data, which torch's zip reader does not notice, is reported as corrupt.
"""

import importlib
import logging
import os
import re
from typing import Any, Callable, Dict, List, Optional, Tuple, Union, cast

import torch
from omegaconf import DictConfig, OmegaConf

from habitat_ver.common.atomic import write_atomically
from habitat_ver.common.checksum import CHECKSUM_KEY, checksum_mismatch, with_checksum
from habitat_ver.common.settings_sections import is_settings_section, moved_settings_section

logger = logging.getLogger(__name__)

# An element of torch.serialization.safe_globals' list: an object, or the
# object and its full name.
_SafeGlobal = Union[Callable[..., Any], Tuple[Callable[..., Any], str]]

RESUME_STATE_NAME = "resume-state.pth"
PREVIOUS_RESUME_STATE_NAME = "resume-state.prev.pth"
CORRUPT_SUFFIX = ".corrupt"  # a corrupt newest resume state, set aside
CHECKPOINT_NAME = re.compile(r"ckpt\.(\d+)\.pth")

# Modules whose dataclasses are passive config records, safe to rebuild (so
# are the registered settings sections, wherever their components keep them).
_CONFIG_MODULES = (
    "habitat.config.default_structured_configs",
    "habitat_baselines.config.default_structured_configs",
)
_SAFE_PREFIXES = ("omegaconf.", "habitat_ver.config.")
_SAFE_NAMES = {
    "typing.Any",
    "typing.Dict",
    "typing.List",
    "typing.Optional",
    "typing.Tuple",
    "typing.Union",
    "collections.defaultdict",
    "collections.OrderedDict",
    "builtins.dict",
    "builtins.list",
    "builtins.tuple",
    "builtins.set",
    "builtins.int",
    "builtins.float",
    "builtins.str",
    "builtins.bool",
    "builtins.NoneType",
}


class CorruptCheckpointError(RuntimeError):
    """A checkpoint or resume-state file exists but cannot be read."""

    def __init__(self, path: str, reason: str):
        super().__init__(
            f"checkpoint file {path!r} is truncated or corrupt and cannot be loaded ({reason})"
        )
        self.path = path
        self.reason = reason


class UnusableResumeStateError(CorruptCheckpointError):
    """Every copy of the resume state exists but none can be read."""

    def __init__(self, errors: List[CorruptCheckpointError]):
        paths = [error.path for error in errors]
        RuntimeError.__init__(
            self,
            f"no usable resume state: {' and '.join(repr(p) for p in paths)} "
            f"{'are all' if len(paths) > 1 else 'is'} truncated or corrupt "
            f"({'; '.join(str(e) for e in errors)}); refusing to start over from "
            "step 0 beside the old checkpoints. To start fresh on purpose, delete "
            f"{'these files' if len(paths) > 1 else 'this file'} or set "
            "habitat_baselines.checkpoint_folder to a new folder",
        )
        self.path = paths[0]
        self.paths = paths


class CheckpointsWithoutResumeStateError(RuntimeError):
    """The checkpoint folder holds ``ckpt.<n>.pth`` files but no resume state:
    a new run from step 0 would overwrite them."""

    def __init__(self, folder: str, checkpoints: List[str]):
        shown = ", ".join(os.path.basename(p) for p in checkpoints[:3])
        more = f" and {len(checkpoints) - 3} more" if len(checkpoints) > 3 else ""
        super().__init__(
            f"habitat_baselines.checkpoint_folder={folder!r} holds checkpoints ({shown}{more}) "
            f"but no {RESUME_STATE_NAME} to resume from, so they are not this run's: "
            "refusing to start over from step 0 and overwrite them. Move them away, or set "
            "habitat_baselines.checkpoint_folder to a new folder"
        )
        self.folder = folder
        self.checkpoints = checkpoints


def checkpoints_in(folder: str) -> List[Tuple[int, str]]:
    """``(n, path)`` of the folder's ``ckpt.<n>.pth`` files, by ``n``."""
    found = []
    for name in os.listdir(folder):
        match = CHECKPOINT_NAME.fullmatch(name)
        if match:
            found.append((int(match.group(1)), os.path.join(folder, name)))
    return sorted(found)


def atomic_torch_save(obj: Any, path: str) -> None:
    """``torch.save`` to ``path`` so readers see the old file or the whole new one."""
    write_atomically(path, lambda out: torch.save(obj, out))


def save_checkpoint_file(state: Dict[str, Any], path: str) -> None:
    """Atomic save of a checkpoint dict, with the checksum of its payload."""
    atomic_torch_save(with_checksum(state), path)


def config_to_plain(config: DictConfig) -> Dict[str, Any]:
    """A config as plain dicts/lists, loadable with ``weights_only=True``."""
    # OmegaConf types the result for any node and key type; a DictConfig of
    # habitat's gives a dict keyed by str.
    return cast(Dict[str, Any], OmegaConf.to_container(config, resolve=True))


def plain_to_config(plain: Dict[str, Any]) -> DictConfig:
    """Inverse of :func:`config_to_plain`; read-only and struct like habitat's."""
    config = OmegaConf.create(plain)
    OmegaConf.set_struct(config, True)
    OmegaConf.set_readonly(config, True)
    return config


def _is_safe_global(name: str) -> bool:
    if name in _SAFE_NAMES or name.startswith(_SAFE_PREFIXES) or is_settings_section(name):
        return True
    if _moved_section(name) is not None:
        return True
    module, _, attr = name.rpartition(".")
    return module in _CONFIG_MODULES


def _moved_section(name: str) -> Optional[type]:
    """A section's dataclass of ours that moved since the checkpoint was
    written, found by its class name (None: not one)."""
    return moved_settings_section(name) if name.startswith("habitat_ver.") else None


def _resolve(name: str) -> Any:
    module, _, attr = name.rpartition(".")
    if module == "builtins" and attr == "NoneType":
        return type(None)
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        moved = _moved_section(name)
        if moved is None:
            raise
        return moved


# OmegaConf's metadata holds a defaultdict (its resolver cache), which torch's
# weights-only unpickler cannot fill: it is read as a plain dict, and the
# config is then rebuilt from plain data (see load_checkpoint_file).
_DEFAULTDICT = "collections.defaultdict"


def _plain_dict(*_default_factory: Any) -> Dict[Any, Any]:
    return {}


def _config_globals(path: str) -> List[_SafeGlobal]:
    # (object, full name) pairs: torch keys a bare object by its __name__,
    # which typing aliases such as typing.List lack before Python 3.10.
    names = torch.serialization.get_unsafe_globals_in_checkpoint(path)
    refused = [n for n in names if not _is_safe_global(n)]
    if refused:
        raise CorruptCheckpointError(
            path,
            f"it pickles objects that are not config records: {sorted(refused)}; "
            "refusing to unpickle them",
        )
    return [(_plain_dict if n == _DEFAULTDICT else _resolve(n), n) for n in names]


def load_checkpoint_file(path: str) -> Dict[str, Any]:
    """Load a checkpoint (ours or upstream-format) without arbitrary unpickling.

    Args:
        path: the file.

    Returns:
        The stored dict, with ``config`` (if present) as a read-only DictConfig.

    Raises:
        FileNotFoundError: no file at ``path``.
        CorruptCheckpointError: the file is truncated, corrupt (its payload
            does not match its checksum), or pickles objects outside the
            config allow-list.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint file {path!r} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as plain_error:  # noqa: BLE001 - classified below
        try:
            safe = _config_globals(path)
        except CorruptCheckpointError:
            raise
        except Exception as scan_error:  # noqa: BLE001
            raise CorruptCheckpointError(path, str(scan_error)) from plain_error
        try:
            with torch.serialization.safe_globals(safe):
                state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:
            raise CorruptCheckpointError(path, str(error)) from error
    if not isinstance(state, dict):
        raise CorruptCheckpointError(path, f"expected a dict, got {type(state)}")
    if checksum_mismatch(state):
        raise CorruptCheckpointError(
            path,
            "its data does not match the checksum stored with it (bit flip or partial overwrite)",
        )
    state.pop(CHECKSUM_KEY, None)
    config = state.get("config")
    if isinstance(config, DictConfig):  # upstream's pickled config: fresh metadata
        config = OmegaConf.to_container(config, resolve=False)
    if isinstance(config, dict):
        state["config"] = plain_to_config(config)
    return state


class ResumeStateFiles:
    """The resume state of a run: the newest copy and the previous good one."""

    def __init__(self, folder: str):
        self.folder = folder
        self.path = os.path.join(folder, RESUME_STATE_NAME)
        self.previous_path = os.path.join(folder, PREVIOUS_RESUME_STATE_NAME)

    def save(self, state: Dict[str, Any]) -> None:
        """Write ``state`` atomically, keeping the former copy as the fallback."""
        if os.path.isfile(self.path):
            os.replace(self.path, self.previous_path)
        save_checkpoint_file(state, self.path)

    @staticmethod
    def _set_aside(path: str) -> None:
        """Renames a corrupt newest copy to ``<name>.corrupt``: the next save
        would otherwise move it over the good previous copy."""
        try:
            os.replace(path, path + CORRUPT_SUFFIX)
        except OSError as error:  # a read-only folder: nothing will be saved there
            logger.warning("could not set %r aside (%s)", path, error)
        else:
            logger.warning("set the corrupt %r aside as %r", path, path + CORRUPT_SUFFIX)

    def load(self) -> Optional[Dict[str, Any]]:
        """The newest readable resume state, or None when there is none.

        A corrupt newest copy is reported (naming the file), set aside as
        ``<name>.corrupt`` and the previous copy is used instead.

        Raises:
            UnusableResumeStateError: resume-state files exist but none is
                readable (starting from step 0 would overwrite the run's
                checkpoints without a word).
            CheckpointsWithoutResumeStateError: no resume-state file, but the
                folder holds ``ckpt.<n>.pth`` files (another run's: ours save
                a resume state with every checkpoint).
        """
        errors: List[CorruptCheckpointError] = []
        for path in (self.path, self.previous_path):
            if not os.path.isfile(path):
                continue
            try:
                state = load_checkpoint_file(path)
            except CorruptCheckpointError as error:
                if path == self.path:
                    logger.error("%s; trying the previous resume state", error)
                errors.append(error)
                continue
            if errors:
                self._set_aside(self.path)
            return state
        if errors:
            raise UnusableResumeStateError(errors)
        if os.path.isdir(self.folder):
            checkpoints = [path for _, path in checkpoints_in(self.folder)]
            if checkpoints:
                raise CheckpointsWithoutResumeStateError(self.folder, checkpoints)
        return None
