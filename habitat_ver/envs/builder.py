"""Builds one environment of a run, inside its worker process.

:class:`~habitat_ver.envs.factory.VerVectorEnvFactory` hands :func:`build_env`
to habitat's ``VectorEnv``.  Gym tasks still go through habitat's own path
(``make_gym_from_config`` -> ``make_env_fn`` -> ``GymRegistryEnv`` ->
``gym.make``, then ``env.seed(habitat.seed)``); on top of it this applies
``habitat_baselines.embedded_env``: which scenario env ``i`` runs, the
keyword arguments of the gym id (``gym_kwargs``; for our Doom ids also the
resolution and frame skip), the straggler wrapper, and episode
names that tell the envs apart at evaluation.  A habitat task (PointNav, the
HAB skills) is habitat's own env, in the straggler wrapper when that is on.
"""

import contextlib
import importlib
from typing import Any, Dict, Iterator

from gym.envs.registration import registry
from habitat.config import read_write
from habitat.gym import make_gym_from_config
from omegaconf import OmegaConf

from habitat_ver.compat.sim_api import bridge_sim_api
from habitat_ver.config.embedded_env import (
    DOOM_IDS,
    GYM_ENV_TASK,
    EmbeddedEnvConfig,
    gym_kwargs_of,
)
from habitat_ver.config.schema import section_or_default
from habitat_ver.envs.episode_names import EpisodeNames
from habitat_ver.envs.straggler import StragglerWrapper


def scenario_for(config: Any, env_index: int) -> str:
    """What env ``env_index`` runs, for messages: its gym id (the mix's if
    one is set, else the task's), or for a habitat task its ``env_task`` and
    simulator type (a habitat task has no gym id)."""
    embedded = section_or_default(config, "embedded_env", EmbeddedEnvConfig)
    if len(embedded.scenarios) > 0:
        return str(embedded.scenarios[env_index % len(embedded.scenarios)])
    if config.habitat.env_task_gym_id:
        return str(config.habitat.env_task_gym_id)
    simulator = OmegaConf.select(config, "habitat.simulator.type", default="")
    return f"{config.habitat.env_task} on {simulator}" if simulator else config.habitat.env_task


@contextlib.contextmanager
def _registry_kwargs(config: Any, gym_id: str, overrides: Dict[str, Any]) -> Iterator[None]:
    # GymRegistryEnv calls gym.make(id) without kwargs, so the settings go into
    # the registry entry for the duration of the construction, and are taken
    # out again so that a later plain gym.make(id) sees the registered defaults.
    if not overrides:
        yield
        return
    # GymRegistryEnv imports these too, but only after this edits the entry.
    for dependency in config.habitat.env_task_gym_dependencies:
        importlib.import_module(dependency)
    spec = registry.env_specs[gym_id]
    registered = spec.kwargs
    spec.kwargs = dict(registered, **overrides)
    try:
        yield
    finally:
        spec.kwargs = registered


def _with_gym_id(config: Any, gym_id: str) -> Any:
    if gym_id == config.habitat.env_task_gym_id:
        return config
    config = config.copy()
    with read_write(config):
        config.habitat.env_task_gym_id = gym_id
    return config


def register_our_habitat_classes(config: Any) -> None:
    """Import our simulator and task action classes the config names (their
    imports need the real habitat-sim, so they are not part of ``import
    habitat_ver``)."""
    from habitat_ver.sims import ACTION_MODULES, SIM_MODULES

    names = [OmegaConf.select(config, "habitat.simulator.type", default="")]
    actions = OmegaConf.select(config, "habitat.task.actions", default=None) or {}
    names += [action.get("type", "") for action in actions.values()]
    for name in names:
        module = SIM_MODULES.get(name) or ACTION_MODULES.get(name)
        if module is not None:
            importlib.import_module(module)


def build_env(config: Any, env_index: int) -> Any:
    """Build the run's env number ``env_index``; habitat's ``make_env_fn`` contract.

    Args:
        config: the env's config (``habitat.seed`` already offset by the
            factory).  ``habitat_baselines.embedded_env`` may be absent
            (upstream configs); its defaults apply then.
        env_index: global index of the env across ranks; picks the scenario
            of a mix and the straggler's random stream.

    Returns:
        for ``habitat.env_task == "GymRegistryEnv"``, habitat's
        ``GymRegistryEnv`` (in a :class:`StragglerWrapper` when
        ``embedded_env.straggler.enabled``) in :class:`EpisodeNames`;
        otherwise what ``make_gym_from_config`` builds, in a
        :class:`StragglerWrapper` when that is enabled.
    """
    embedded = section_or_default(config, "embedded_env", EmbeddedEnvConfig)
    if config.habitat.env_task != GYM_ENV_TASK:
        bridge_sim_api()
        register_our_habitat_classes(config)
        habitat_env = make_gym_from_config(config)
        if embedded.straggler.enabled:
            habitat_env = StragglerWrapper(habitat_env, embedded.straggler, env_index)
        return habitat_env
    gym_id = scenario_for(config, env_index)
    config = _with_gym_id(config, gym_id)
    kwargs = gym_kwargs_of(embedded)
    if gym_id in DOOM_IDS:
        kwargs["resolution"] = tuple(int(v) for v in embedded.resolution)
        kwargs["frame_skip"] = int(embedded.frame_skip)
    with _registry_kwargs(config, gym_id, kwargs):
        env = make_gym_from_config(config)
    if embedded.straggler.enabled:
        env = StragglerWrapper(env, embedded.straggler, env_index)
    return EpisodeNames(env, gym_id, env_index)
