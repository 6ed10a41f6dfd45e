"""Cross-field checks of a run's config, called once at trainer start.

Each failure raises :class:`ConfigError` naming the key, the bad value and what
is allowed, before any process is spawned or any file written.
"""

import importlib
import os
from typing import Any

from omegaconf import OmegaConf

from habitat_ver.compat import sim_free


class ConfigError(ValueError):
    """A config value that habitat-ver cannot run with."""


def _check(condition: bool, key: str, value: Any, allowed: str) -> None:
    if not condition:
        raise ConfigError(f"{key}={value!r} is not allowed: {allowed}")


def validate_simulator_available(config: Any) -> None:
    """In sim-free mode, refuse configs that need habitat-sim, naming it."""
    env_task = config.habitat.env_task
    if sim_free.is_active() and env_task != "GymRegistryEnv":
        raise sim_free.HabitatSimRequiredError(
            f"This config runs habitat.env_task={env_task!r} with simulator "
            f"{config.habitat.simulator.type!r}"
        )


def validate_gym_id(config: Any) -> None:
    """For GymRegistryEnv, the gym id (and every scenario in the mix) must exist."""
    if config.habitat.env_task != "GymRegistryEnv":
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
    ids = [config.habitat.env_task_gym_id]
    embedded = config.habitat_baselines.get("embedded_env")
    if embedded is not None and len(embedded.scenarios) > 0:
        ids = list(embedded.scenarios)
    known = set(registry.env_specs)
    ours = sorted(k for k in known if k.startswith("habitat_ver/"))
    for gym_id in ids:
        _check(
            gym_id in known,
            "habitat.env_task_gym_id",
            gym_id,
            f"not a registered gym id; habitat-ver's ids are {ours}, and any id "
            "registered by a module in habitat.env_task_gym_dependencies works",
        )


def validate_training(config: Any) -> None:
    """Numeric settings of the rollout and of DD-PPO."""
    baselines = config.habitat_baselines
    _check(
        baselines.num_environments > 0,
        "habitat_baselines.num_environments",
        baselines.num_environments,
        "must be a positive integer",
    )
    ppo = baselines.rl.ppo
    _check(ppo.num_steps > 0, "habitat_baselines.rl.ppo.num_steps", ppo.num_steps, "must be >= 1")
    _check(
        ppo.num_mini_batch > 0,
        "habitat_baselines.rl.ppo.num_mini_batch",
        ppo.num_mini_batch,
        "must be >= 1",
    )
    _check(ppo.ppo_epoch > 0, "habitat_baselines.rl.ppo.ppo_epoch", ppo.ppo_epoch, "must be >= 1")
    sync_frac = baselines.rl.ddppo.sync_frac
    _check(
        0.0 < sync_frac <= 1.0,
        "habitat_baselines.rl.ddppo.sync_frac",
        sync_frac,
        "must be in (0, 1]",
    )
    preemption = baselines.get("distrib_preemption")
    if preemption is not None:
        policies = ("auto", "none", "ddppo", "ver")
        _check(preemption.policy in policies, "habitat_baselines.distrib_preemption.policy",
               preemption.policy, f"one of {policies}")


def validate_appo(config: Any) -> None:
    """``habitat_baselines.rl.appo`` (read by the appo trainer only)."""
    baselines = config.habitat_baselines
    appo = baselines.rl.get("appo")
    if appo is None or baselines.trainer_name != "appo":
        return
    key = "habitat_baselines.rl.appo."
    workers = appo.num_rollout_workers
    _check(workers > 0 and baselines.num_environments % workers == 0,
           key + "num_rollout_workers", workers,
           f"a positive divisor of habitat_baselines.num_environments={baselines.num_environments}")
    per_worker = baselines.num_environments // workers
    _check(appo.num_env_groups > 0 and per_worker % appo.num_env_groups == 0,
           key + "num_env_groups", appo.num_env_groups,
           f"a positive divisor of the envs per rollout worker ({per_worker})")
    _check(appo.batch_trajectories >= 0, key + "batch_trajectories", appo.batch_trajectories,
           ">= 0 (0: habitat_baselines.num_environments)")
    batch = appo.batch_trajectories or baselines.num_environments
    _check(appo.num_trajectory_slots == 0
           or appo.num_trajectory_slots >= batch + baselines.num_environments,
           key + "num_trajectory_slots", appo.num_trajectory_slots,
           f"0 (automatic) or >= batch_trajectories + num_environments ({batch} + "
           f"{baselines.num_environments})")
    _check(baselines.rl.ppo.num_mini_batch <= batch,
           "habitat_baselines.rl.ppo.num_mini_batch", baselines.rl.ppo.num_mini_batch,
           f"at most the trajectories per batch ({batch}) for appo")
    for name in ("vtrace_rho_clip", "vtrace_c_clip"):
        _check(appo[name] > 0, key + name, appo[name], "must be > 0")
    _check(appo.max_policy_lag >= 0, key + "max_policy_lag", appo.max_policy_lag, "must be >= 0")


def validate_eval(config: Any) -> None:
    """Evaluation needs an existing checkpoint file or folder."""
    baselines = config.habitat_baselines
    if not baselines.evaluate or not baselines.eval.should_load_ckpt:
        return
    path = baselines.eval_ckpt_path_dir
    _check(
        os.path.exists(path),
        "habitat_baselines.eval_ckpt_path_dir",
        path,
        "no such checkpoint file or folder",
    )


POINTNAV_DATASET_COMMAND = "python -m habitat_ver.tools.make_pointnav_dataset"


def validate_pointnav_dataset(config: Any) -> None:
    """A ``PointNav-v1`` split that is not there names the command generating it."""
    dataset = OmegaConf.select(config, "habitat.dataset")
    if dataset is None or dataset.get("type") != "PointNav-v1":
        return
    baselines = config.habitat_baselines
    split = baselines.eval.split if baselines.evaluate else dataset.split
    path = dataset.data_path.format(split=split)
    _check(
        os.path.isfile(path),
        "habitat.dataset.data_path",
        path,
        f"no such file; the pointnav/* datasets are generated (no download) with "
        f"`{POINTNAV_DATASET_COMMAND}` (see its --help for --stages-dir and --out)",
    )


def validate(config: Any) -> None:
    """All checks; call before building environments."""
    validate_simulator_available(config)
    validate_pointnav_dataset(config)
    validate_training(config)
    validate_gym_id(config)
    validate_appo(config)
    validate_eval(config)
    embedded = config.habitat_baselines.get("embedded_env")
    if embedded is not None:
        from habitat_ver.config.embedded_env import validate_embedded_env

        validate_embedded_env(embedded)
