"""Checks of what a run's environments need, before any of them is built.

habitat-sim (or sim-free mode's refusal naming it), the gym id and every
scenario of a mix, the keyword arguments ``embedded_env.gym_kwargs`` passes to
them, the render device of habitat-sim tasks, and a PointNav dataset (its
episode and scene files).  Each failure is one
:class:`ConfigError` (or :class:`~habitat_ver.compat.sim_free.HabitatSimRequiredError`)
naming the key, the value and what is allowed.
"""

import difflib
import glob
import importlib
import inspect
import os
from typing import Any, Dict, List, Optional

from omegaconf import OmegaConf

from habitat_ver.compat import sim_free
from habitat_ver.config.embedded_env import (
    DOOM_IDS,
    DOOM_KWARGS_SET_ELSEWHERE,
    GYM_ENV_TASK,
    gym_kwargs_of,
)
from habitat_ver.config import episode_files
from habitat_ver.config.errors import ConfigError, check

POINTNAV_DATASET_COMMAND = "python -m habitat_ver.tools.make_pointnav_dataset"
_GYM_KWARGS_KEY = "habitat_baselines.embedded_env.gym_kwargs"
GPU_DEVICE_KEY = "habitat.simulator.habitat_sim_v0.gpu_device_id"
_REGENERATE = (
    f"regenerate it (the pointnav/* datasets: `{POINTNAV_DATASET_COMMAND}`) or fetch it again"
)
# Per-scene episode files (``content/``) read before the envs start, in
# compressed bytes (a full-size dataset's would take minutes); the rest are
# read by the env workers, as before.
CONTENT_BYTES_READ = 64 * 1024 * 1024


def validate_simulator_available(config: Any) -> None:
    """In sim-free mode, refuse configs that need habitat-sim, naming it."""
    env_task = config.habitat.env_task
    if sim_free.is_active() and env_task != GYM_ENV_TASK:
        what = (
            f"This config runs habitat.env_task={env_task!r} with simulator "
            f"{config.habitat.simulator.type!r}"
        )
        from habitat_ver.config import hab_data

        if hab_data.is_rearrange_config(config):
            missing = hab_data.missing_hab_data(config)
            if missing:
                # Both are needed; the download command itself needs habitat-sim.
                what += f", and its {hab_data.describe_missing(missing)}"
        raise sim_free.HabitatSimRequiredError(what)


def cuda_visibly_absent() -> bool:
    """No CUDA device for torch and no NVIDIA device file (``/dev/nvidia<n>``).

    habitat-sim picks its EGL device by CUDA device id, which needs NVIDIA's
    driver; the device files are there wherever that driver is, even where
    torch sees no device (a CPU-only torch build, ``CUDA_VISIBLE_DEVICES=""``),
    so such machines are not taken for GPU-less ones.
    """
    import torch

    if torch.cuda.is_available():
        return False
    return not glob.glob("/dev/nvidia[0-9]*")


def validate_render_device(config: Any) -> None:
    """A habitat-sim task set to render on a CUDA device, on a machine without
    one, names the CPU setting (habitat-sim failed in every env worker with
    ``unable to find CUDA device 0 among 1 EGL devices``)."""
    if config.habitat.env_task == GYM_ENV_TASK or sim_free.is_active():
        return  # no habitat-sim renderer (sim-free mode refused habitat tasks already)
    device = OmegaConf.select(config, GPU_DEVICE_KEY)
    if device is None or device < 0 or not _renders(config) or not cuda_visibly_absent():
        return
    check(
        False,
        GPU_DEVICE_KEY,
        device,
        "this machine has no CUDA device (torch sees none and there is no /dev/nvidia*); "
        f"{GPU_DEVICE_KEY}=-1 renders on the CPU",
    )


def _renders(config: Any) -> bool:
    """Whether habitat-sim will make a render context (it does only for
    sensors; a task without cameras runs anywhere, whatever the device id)."""
    simulator = config.habitat.simulator
    if simulator.get("enable_batch_renderer", False):
        return True
    agents = simulator.get("agents") or {}
    if any(len(agent.get("sim_sensors") or {}) > 0 for agent in agents.values()):
        return True
    baselines = config.habitat_baselines
    return bool(baselines.evaluate and baselines.eval.get("extra_sim_sensors"))


def validate_gym_id(config: Any) -> None:
    """For GymRegistryEnv: the gym id (and every scenario of the mix) exists,
    and takes the keyword arguments of ``embedded_env.gym_kwargs``."""
    if config.habitat.env_task != GYM_ENV_TASK:
        return
    from gym.envs.registration import registry

    for dependency in config.habitat.env_task_gym_dependencies:
        try:
            importlib.import_module(dependency)
        except ImportError as error:
            raise ConfigError(
                f"habitat.env_task_gym_dependencies contains {dependency!r}, "
                f"which cannot be imported ({error})"
            ) from error
    key, ids = "habitat.env_task_gym_id", [config.habitat.env_task_gym_id]
    embedded = config.habitat_baselines.get("embedded_env")
    if embedded is not None and len(embedded.scenarios) > 0:
        key, ids = "habitat_baselines.embedded_env.scenarios", list(embedded.scenarios)
    known = set(registry.env_specs)
    ours = sorted(k for k in known if k.startswith("habitat_ver/"))
    for gym_id in ids:
        if gym_id in known:
            continue
        close = difflib.get_close_matches(str(gym_id), known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(
            f"{key} names {gym_id!r}, which is not a registered gym id; {hint}"
            f"habitat-ver's ids are {ours}, and any id registered by a module in "
            "habitat.env_task_gym_dependencies works"
        )
    gym_kwargs = gym_kwargs_of(embedded) if embedded is not None else {}
    for gym_id in ids:
        _validate_gym_kwargs(gym_id, gym_kwargs)


def _accepted_kwargs(gym_id: str) -> Optional[List[str]]:
    """The keyword arguments the id's entry point takes; None when it takes
    any (``**kwargs``) or its signature cannot be read."""
    from gym.envs.registration import load, registry

    entry_point = registry.env_specs[gym_id].entry_point
    try:
        target = load(entry_point) if isinstance(entry_point, str) else entry_point
        parameters = list(inspect.signature(target).parameters.values())
    except (ImportError, AttributeError, TypeError, ValueError):
        return None  # gym.make reports it, with the real cause
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _validate_gym_kwargs(gym_id: str, gym_kwargs: Dict[str, Any]) -> None:
    if not gym_kwargs:
        return
    accepted = _accepted_kwargs(gym_id)
    for name in gym_kwargs:
        value = gym_kwargs[name]
        key = f"{_GYM_KWARGS_KEY}.{name}"
        if gym_id in DOOM_IDS:
            elsewhere = DOOM_KWARGS_SET_ELSEWHERE.get(name, "")
            check(not elsewhere, key, value, f"for {gym_id}, {elsewhere}")
        check(
            accepted is None or name in accepted,
            key,
            value,
            f"{gym_id}'s constructor takes no argument of that name; "
            f"it takes {', '.join(accepted) if accepted else 'none'}",
        )


def validate_pointnav_dataset(config: Any) -> None:
    """A ``PointNav-v1`` split: its file is there (else the command generating
    it is named), its scenes folder too, its episode files read as episodes,
    and the scene files their episodes name exist (:mod:`.episode_files`)."""
    dataset = OmegaConf.select(config, "habitat.dataset")
    if dataset is None or dataset.get("type") != "PointNav-v1":
        return
    key = episode_files.split_key(config)
    split = OmegaConf.select(config, key)
    episode_files.check_split(dataset.data_path, split, key, _REGENERATE)
    path = dataset.data_path.format(split=split)
    check(
        os.path.isfile(path),
        "habitat.dataset.data_path",
        path,
        f"no such file; the pointnav/* datasets are generated (no download) with "
        f"`{POINTNAV_DATASET_COMMAND}` (see its --help for --stages-dir and --out)",
    )
    episode_files.check_scenes_dir(dataset.scenes_dir)
    content_scenes = list(dataset.content_scenes)
    content = episode_files.read_episode_file(path, "habitat.dataset.data_path", _REGENERATE)
    # content_scenes filters the split file's episodes; a per-scene file is
    # read whole.
    files = {path: episode_files.selected_episodes(content["episodes"], content_scenes)}
    files.update(_content_files(content, path, content_scenes))
    # With a scene dataset config, a scene id may be a handle in it, not a file.
    if OmegaConf.select(config, "habitat.simulator.scene_dataset") in ("default", "", None):
        for name, episodes in files.items():
            episode_files.check_scene_files(episodes, dataset.scenes_dir, name, _REGENERATE)


def _content_files(
    content: Dict[str, Any], path: str, content_scenes: List[str]
) -> Dict[str, List[Any]]:
    """The episodes of a split kept in one file per scene (habitat's
    ``content/{scene}.json.gz`` beside the split's file), read up to
    :data:`CONTENT_BYTES_READ` bytes in all; the rest are only checked to exist."""
    pattern = content.get("content_scenes_path")
    if not isinstance(pattern, str) or "{scene}" not in pattern:
        pattern = "{data_path}/content/{scene}.json.gz"  # habitat-lab's default
    folder = pattern.split("{scene}")[0].format(data_path=os.path.dirname(path))
    if not os.path.isdir(folder):
        return {}
    suffix = pattern.split("{scene}")[1]
    if "*" in content_scenes:
        names = sorted(n[: -len(suffix)] for n in os.listdir(folder) if n.endswith(suffix))
    else:
        names = content_scenes
    found: Dict[str, List[Any]] = {}
    budget = CONTENT_BYTES_READ
    for name in names:
        scene_path = f"{folder}{name}{suffix}"
        if budget > 0 or not os.path.isfile(scene_path):
            read = episode_files.read_episode_file(
                scene_path, "habitat.dataset.content_scenes", _REGENERATE
            )
            found[scene_path] = read["episodes"]
            budget -= os.path.getsize(scene_path)
    return found
