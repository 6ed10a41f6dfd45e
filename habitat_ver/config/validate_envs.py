"""Checks of what a run's environments need, before any of them is built.

habitat-sim (or sim-free mode's refusal naming it), the gym id and every
scenario of a mix, the keyword arguments ``embedded_env.gym_kwargs`` passes to
them, and the generated PointNav dataset.  Each failure is one
:class:`ConfigError` (or :class:`~habitat_ver.compat.sim_free.HabitatSimRequiredError`)
naming the key, the value and what is allowed.
"""

import difflib
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
from habitat_ver.config.errors import ConfigError, check

POINTNAV_DATASET_COMMAND = "python -m habitat_ver.tools.make_pointnav_dataset"
_GYM_KWARGS_KEY = "habitat_baselines.embedded_env.gym_kwargs"


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
    """A ``PointNav-v1`` split that is not there names the command generating it."""
    dataset = OmegaConf.select(config, "habitat.dataset")
    if dataset is None or dataset.get("type") != "PointNav-v1":
        return
    baselines = config.habitat_baselines
    split = baselines.eval.split if baselines.evaluate else dataset.split
    path = dataset.data_path.format(split=split)
    check(
        os.path.isfile(path),
        "habitat.dataset.data_path",
        path,
        f"no such file; the pointnav/* datasets are generated (no download) with "
        f"`{POINTNAV_DATASET_COMMAND}` (see its --help for --stages-dir and --out)",
    )
