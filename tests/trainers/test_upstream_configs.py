"""Upstream habitat-baselines configs with only ``trainer_name`` changed.

Upstream configs name upstream's vector-env factory (which crashes on an
explicit list of 2+ scenes), upstream's storage (which VER cannot fill) and
have no ``rl.appo`` section; each trainer adapts them
(:mod:`habitat_ver.config.upstream`).  These runs use CartPole so that they
need no simulator; the real-simulator runs of the upstream PointNav config are
in ``tests/sim/test_upstream_pointnav.py``.
"""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from habitat_baselines.config.default_structured_configs import RLConfig

from habitat_ver.trainers.appo_settings import AppoConfig
from habitat_ver.config.compose import get_config
from habitat_ver.config.upstream import OUR_ENV_FACTORY
from habitat_ver.config.validate import ConfigError
from habitat_ver.envs.factory import env_builders
from habitat_ver.run import execute_exp, get_trainer_class
from habitat_ver.storage.ver_storage import VERStorage
from habitat_ver.trainers.ver import VERTrainer

from .conftest import run_overrides

UPSTREAM_CONFIGS = Path(__file__).parents[1] / "fixtures" / "upstream_configs"
UPSTREAM_FACTORY = "habitat_baselines.common.HabitatVectorEnvFactory"
T, N = 16, 2  # run_overrides' rollout length and env count


def test_ddppo_runs_upstreams_factory_with_an_explicit_scene_list(out_dir):
    # Upstream's factory would random.shuffle the read-only ListConfig
    # (ReadonlyConfigError) before building any env.
    overrides = run_overrides(out_dir, 2) + [
        f"habitat_baselines.vector_env_factory._target_={UPSTREAM_FACTORY}",
        "habitat.dataset.content_scenes=[scene_a,scene_b]",
    ]
    trainer = execute_exp(get_config("gym/ddppo_cartpole", overrides), "train")
    assert trainer.num_steps_done == 2 * T * N
    assert trainer.config.habitat_baselines.vector_env_factory._target_ == OUR_ENV_FACTORY
    assert list(trainer.config.habitat.dataset.content_scenes) == ["scene_a", "scene_b"]


def test_ver_runs_with_upstreams_default_storage_name(out_dir):
    # Upstream's RolloutStorage does not take VER's `variable_experience`
    # argument (TypeError in the storage constructor).
    overrides = run_overrides(out_dir, 2) + [
        "habitat_baselines.rollout_storage_name=RolloutStorage"
    ]
    trainer = execute_exp(get_config("gym/ver_cartpole", overrides), "train")
    assert type(trainer.agent.rollouts) is VERStorage
    assert trainer.num_steps_done == 2 * T * N
    assert [sum(c) for c in trainer.env_steps_per_rollout] == [T * N] * 2


@pytest.mark.parametrize("name", ["RolloutStorage", "VERRolloutStorage", "LockstepRolloutStorage"])
def test_ver_reads_lockstep_storage_names_as_ver_storage(name):
    config = get_config("gym/ver_cartpole", [f"habitat_baselines.rollout_storage_name={name}"])
    adapted = VERTrainer.adapt_config(config)
    assert adapted.habitat_baselines.rollout_storage_name == "VERStorage"
    assert config.habitat_baselines.rollout_storage_name == name  # the input is not modified


def test_ver_refuses_a_storage_it_cannot_fill(out_dir):
    config = get_config(
        "gym/ver_cartpole",
        run_overrides(out_dir) + ["habitat_baselines.rollout_storage_name=HrlRolloutStorage"],
    )
    with pytest.raises(
        ConfigError,
        match=(
            r"habitat_baselines.rollout_storage_name='HrlRolloutStorage' is not allowed "
            r"for trainer 'ver': it needs 'VERStorage'"
        ),
    ):
        VERTrainer(config)
    assert not (out_dir / "checkpoints").exists()  # refused before any file or process


def test_appo_runs_a_config_without_its_section(out_dir):
    plain = OmegaConf.to_container(
        get_config("gym/appo_cartpole", run_overrides(out_dir, 2, num_envs=4))
    )
    rl = plain["habitat_baselines"].pop("rl")
    del rl["appo"], rl["max_nonfinite_rewards"]  # not in upstream's schema
    del rl["ver"]["min_batch_fraction"], rl["ver"]["max_wait_ms"]
    config = OmegaConf.create(plain)
    # As upstream's schema composes it: rl typed by upstream's RLConfig, so a
    # key added to it untyped would be refused as unknown.
    config.habitat_baselines.rl = OmegaConf.merge(OmegaConf.structured(RLConfig), rl)
    OmegaConf.set_readonly(config, True)
    trainer = execute_exp(config, "train")
    assert trainer.config.habitat_baselines.rl.appo == OmegaConf.structured(AppoConfig)
    # batch_trajectories defaults to num_environments: 4 trajectories of T per update
    assert trainer.num_steps_done == 2 * 4 * T
    assert trainer.num_updates_done == 2


def test_env_builders_split_the_scenes_across_envs():
    # ver's and appo's env workers: before, every env got every scene.
    config = get_config(
        "gym/ver_cartpole",
        [
            "habitat.env_task=GymHabitatEnv",
            "habitat_baselines.num_environments=2",
            "habitat.dataset.content_scenes=[s0,s1,s2]",
        ],
    )
    scenes = [list(make.args[0].habitat.dataset.content_scenes) for _, make in env_builders(config)]
    assert sorted(scenes[0] + scenes[1]) == ["s0", "s1", "s2"]
    assert sorted(len(s) for s in scenes) == [1, 2]
    seeds = [make.args[0].habitat.seed for _, make in env_builders(config)]
    assert seeds == [config.habitat.seed, config.habitat.seed + 1]


@pytest.mark.parametrize("trainer_name", ["ddppo", "ver", "appo"])
def test_upstream_pointnav_config_is_adapted_for_each_trainer(trainer_name):
    config = get_config(
        "pointnav/ddppo_pointnav",
        [f"habitat_baselines.trainer_name={trainer_name}"],
        config_dir=UPSTREAM_CONFIGS,
    )
    baselines = config.habitat_baselines
    assert (baselines.vector_env_factory._target_, baselines.rollout_storage_name) == (
        UPSTREAM_FACTORY,
        "RolloutStorage",
    )
    assert "appo" not in baselines.rl
    adapted = get_trainer_class(trainer_name).adapt_config(config).habitat_baselines
    assert adapted.vector_env_factory._target_ == OUR_ENV_FACTORY
    expected_storage = "VERStorage" if trainer_name == "ver" else "RolloutStorage"
    assert adapted.rollout_storage_name == expected_storage
    assert ("appo" in adapted.rl) == (trainer_name == "appo")
    # appo's V-trace is a targets step of our updater: upstream's PPO reads as it.
    assert baselines.updater_name == "PPO"
    assert adapted.updater_name == ("PPOUpdater" if trainer_name == "appo" else "PPO")
