"""Vector-env factory for habitat-ver's trainers.

Selected in config with
``habitat_baselines.vector_env_factory._target_=habitat_ver.envs.factory.VerVectorEnvFactory``.
Compared with upstream's ``HabitatVectorEnvFactory`` it

* builds each environment with :func:`habitat_ver.envs.builder.build_env`,
  which applies the embedded-env settings (scenario mix, resolution, straggler
  wrapper) on top of habitat's own ``make_gym_from_config``;
* splits scenes without shuffling the read-only config list in place (upstream
  crashes with ``ReadonlyConfigError`` for any explicit list of 2+ scenes);
* makes the worker processes import :mod:`habitat_ver` first, so that they
  also run in sim-free mode;
* returns a :class:`~habitat_ver.system.lockstep_pool.LockstepPool`: an env
  that raises or hangs is named, stop signals work while one hangs, and no
  worker outlives the trainer.

To build envs another way (a wrapper of your own, say), subclass it, override
:meth:`VerVectorEnvFactory.make_env` and name the subclass in
``vector_env_factory._target_``: ``ddppo``'s vector env, the env workers of
``ver`` and ``appo`` (:func:`env_builders`) and evaluation all build through it.
"""

import functools
import os
import random
from typing import Any, Callable, List, Sequence, Tuple

import hydra
from habitat import VectorEnv, logger
from habitat.config import read_write
from habitat_baselines.common.env_factory import VectorEnvFactory
from omegaconf import OmegaConf

from habitat_ver.config.embedded_env import GYM_ENV_TASK
from habitat_ver.config.errors import ConfigError
from habitat_ver.system.trainer_watch import hang_warning_seconds
from habitat_ver.envs.builder import build_env, scenario_for
from habitat_ver.system.stop_signals import worker_context
from habitat_ver.system.lockstep_pool import LockstepPool, ObservedThreadedVectorEnv


# A log line longer than this is cut (the full list is in the dataset): with
# the logger's timestamp (24 characters) a line of the log stays within 300.
MAX_LINE_CHARS = 276


def split_scenes(scenes: Sequence[str], num_environments: int, seed: int) -> List[List[str]]:
    """Shuffle a copy of ``scenes`` and deal them out round-robin.

    With fewer scenes than environments every environment gets all scenes
    (upstream's behaviour).  An empty list gives empty splits (gym tasks).
    """
    scenes = list(scenes)
    random.Random(seed).shuffle(scenes)
    if len(scenes) < num_environments:
        return [list(scenes) for _ in range(num_environments)]
    splits: List[List[str]] = [[] for _ in range(num_environments)]
    for index, scene in enumerate(scenes):
        splits[index % num_environments].append(scene)
    return splits


def scene_splits(scenes: Sequence[str], num_environments: int, seed: int) -> List[List[str]]:
    """:func:`split_scenes`, logged when there are scenes (gym tasks have none);
    one warning when the envs share them (fewer scenes than envs)."""
    splits = split_scenes(scenes, num_environments, seed)
    if any(splits):
        logger.info(splits_line(splits))
    if scenes and len(scenes) < num_environments:
        logger.warning(
            f"habitat_ver: {num_environments} environments on {len(scenes)} scene(s): "
            "every environment runs all of them"
        )
    return splits


def splits_line(splits: List[List[str]], max_chars: int = MAX_LINE_CHARS) -> str:
    """The log line saying which scenes each environment runs, at most
    ``max_chars`` long: every split where that fits, else the counts and
    environment 0's first scenes (a HAB dataset's full list runs to
    thousands of characters)."""
    line = f"habitat_ver: scenes per environment: {splits}"
    if len(line) <= max_chars:
        return line
    sizes = [len(split) for split in splits]
    distinct = len({scene for split in splits for scene in split})
    line = (
        f"habitat_ver: {distinct} scenes over {len(splits)} environments, "
        f"{min(sizes)} to {max(sizes)} each; environment 0 runs "
    )
    shown: List[str] = []
    for scene in splits[0]:
        more = f", ... ({len(splits[0]) - len(shown) - 1} more)"
        if len(line + ", ".join(shown + [scene]) + more) > max_chars:
            break
        shown.append(scene)
    rest = len(splits[0]) - len(shown)
    if not shown:
        return f"{line}{rest} of them"
    return line + ", ".join(shown) + (f", ... ({rest} more)" if rest else "")


def environments_for(scenes: Sequence[str], num_environments: int, one_per_scene: bool) -> int:
    """How many envs to build: ``num_environments``, or one per scene when
    ``one_per_scene`` (evaluation, upstream's rule) and the scenes are fewer,
    with one warning naming the key.  Everything sized per env must then be
    sized for this count (the trainer sets it in the configs it evaluates
    with: :meth:`habitat_ver.trainers.base.HabitatVerTrainer._init_envs`)."""
    if not one_per_scene or not scenes or len(scenes) >= num_environments:
        return num_environments
    logger.warning(
        f"habitat_ver: habitat_baselines.num_environments={num_environments}, but the data "
        f"has {len(scenes)} scene(s) and evaluation runs one environment per scene: "
        f"evaluating with {len(scenes)} environment(s)"
    )
    return len(scenes)


def _scenes_of(config: Any) -> List[str]:
    if config.habitat.env_task == GYM_ENV_TASK:
        return []  # gym tasks have no scenes: skip loading a dataset
    scenes = list(config.habitat.dataset.content_scenes)
    if "*" in scenes:
        from habitat import make_dataset

        dataset = make_dataset(config.habitat.dataset.type)
        scenes = dataset.get_scenes_to_load(config.habitat.dataset)
    return scenes


def rank() -> int:
    """This process's rank (0 when not distributed)."""
    import torch.distributed as dist

    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


class VerVectorEnvFactory(VectorEnvFactory):
    """Builds a guarded ``VectorEnv`` over :meth:`make_env` workers."""

    @staticmethod
    def make_env(config: Any, env_index: int) -> Any:
        """The hook: one env from its config (seed and scenes already set)
        and its global index. A subclass's override must stay a
        ``staticmethod`` (it is pickled by name into the worker processes)."""
        return build_env(config, env_index)

    def construct_envs(
        self,
        config: Any,
        workers_ignore_signals: bool = False,
        enforce_scenes_greater_eq_environments: bool = False,
        is_first_rank: bool = True,
    ) -> VectorEnv:
        num_environments = config.habitat_baselines.num_environments
        if num_environments < 1:
            raise ValueError(
                f"habitat_baselines.num_environments={num_environments} is not "
                "allowed: it must be a positive integer"
            )
        scenes = _scenes_of(config)
        num_environments = environments_for(
            scenes, num_environments, enforce_scenes_greater_eq_environments
        )
        splits = scene_splits(scenes, num_environments, config.habitat.seed)
        # Env indices are global across ranks (rank r owns r*N .. r*N+N-1), so
        # per-env settings such as the straggler wrapper's `slow_env_indices`
        # name one environment of the whole run.
        first_index = rank() * num_environments
        env_args = tuple(
            (self.env_config(config, i, splits[i], is_first_rank), first_index + i)
            for i in range(num_environments)
        )
        # habitat's VectorEnv uses the forkserver start method: its workers
        # import habitat_ver (sim-free mode) before they unpickle anything,
        # and its server outlives a stop signal to the process group.
        worker_context()
        if int(os.environ.get("HABITAT_ENV_DEBUG", 0)):
            # Upstream's debugging switch: step the envs in threads of this
            # process (kept for the configs that name it).
            envs: VectorEnv = ObservedThreadedVectorEnv(
                make_env_fn=self.make_env,
                env_fn_args=env_args,
                workers_ignore_signals=workers_ignore_signals,
            )
        else:
            envs = LockstepPool(
                make_env_fn=self.make_env,
                env_fn_args=env_args,
                workers_ignore_signals=workers_ignore_signals,
                describe=lambda i: (
                    f"global index {first_index + i}, {scenario_for(config, first_index + i)}"
                ),
                hang_warning_s=hang_warning_seconds(config),
            )
        if OmegaConf.select(config, "habitat.simulator.renderer.enable_batch_renderer"):
            envs.initialize_batch_renderer(config)
        return envs

    @staticmethod
    def env_config(config: Any, env_index: int, scenes: List[str], is_first_rank: bool) -> Any:
        env_config = config.copy()
        with read_write(env_config):
            task = env_config.habitat
            task.seed = task.seed + env_index
            dropped = [] if is_first_rank else list(task.task.rank0_measure_names)
            if env_index != 0 or not is_first_rank:
                dropped += list(task.task.rank0_env0_measure_names)
            task.task.measurements = {
                k: v for k, v in task.task.measurements.items() if k not in dropped
            }
            if scenes:
                task.dataset.content_scenes = scenes
        return env_config


def configured_factory(config: Any) -> VerVectorEnvFactory:
    """The config's ``vector_env_factory``, which must be ours or a subclass.

    Raises:
        ConfigError: it names another factory, whose envs the env workers of
            ``ver`` and ``appo`` could not build.
    """
    factory = hydra.utils.instantiate(config.habitat_baselines.vector_env_factory)
    if not isinstance(factory, VerVectorEnvFactory):
        raise ConfigError(
            "habitat_baselines.vector_env_factory._target_="
            f"{config.habitat_baselines.vector_env_factory._target_!r} is not allowed for "
            f"trainer {config.habitat_baselines.trainer_name!r}: its env workers build each "
            "env through VerVectorEnvFactory.make_env; subclass "
            "habitat_ver.envs.factory.VerVectorEnvFactory and override make_env"
        )
    return factory


def env_builders(config: Any) -> List[Tuple[int, Callable[[], Any]]]:
    """``(global env index, picklable zero-argument builder)`` for each env of
    this rank, configured (scenes split, seeds offset) and built as the
    config's :class:`VerVectorEnvFactory` builds its envs; what our env
    worker processes build."""
    factory = configured_factory(config)
    num_envs = config.habitat_baselines.num_environments
    splits = scene_splits(_scenes_of(config), num_envs, config.habitat.seed)
    first = rank() * num_envs
    return [
        (
            first + i,
            functools.partial(
                factory.make_env,
                factory.env_config(config, i, splits[i], rank() == 0),
                first + i,
            ),
        )
        for i in range(num_envs)
    ]
