"""build_env: habitat's GymRegistryEnv path plus scenario mix, resolution, stragglers."""

import pickle

import gym
import numpy as np
import pytest
from omegaconf import OmegaConf

import habitat_ver  # noqa: F401  (sim-free mode before habitat)
from habitat.core.environments import GymRegistryEnv
from habitat_ver.config.embedded_env import EmbeddedEnvConfig
from habitat_ver.envs.builder import build_env, scenario_for
from habitat_ver.envs.doom import DoomEnv
from habitat_ver.config.errors import ConfigError
from habitat_ver.envs.episode_names import EpisodeNames
from habitat_ver.envs.factory import VerVectorEnvFactory, env_builders
from habitat_ver.envs.straggler import StragglerWrapper

MIX = [
    "habitat_ver/DoomMyWayHome-v0",
    "habitat_ver/DoomHealthGathering-v0",
    "habitat_ver/DoomDefendTheCenter-v0",
    "habitat_ver/DoomDeathmatchBots-v0",
]


def _config(gym_id="habitat_ver/DoomMyWayHome-v0", embedded=None, seed=3):
    """The keys habitat's make_gym_from_config / GymRegistryEnv read."""
    habitat = {
        "env_task": "GymRegistryEnv",
        "env_task_gym_id": gym_id,
        "env_task_gym_dependencies": ["habitat_ver.envs"],
        "seed": seed,
        "dataset": {"type": "NoEpisodes-v0"},
    }
    baselines = {}
    if embedded is not None:
        section = OmegaConf.structured(EmbeddedEnvConfig)
        baselines["embedded_env"] = OmegaConf.merge(section, embedded)
    return OmegaConf.create({"habitat": habitat, "habitat_baselines": baselines})


def _doom(env) -> DoomEnv:
    return env.unwrapped


def test_cartpole_through_gym_registry_env():
    env = build_env(_config("CartPole-v1"), env_index=0)
    assert isinstance(env, EpisodeNames) and isinstance(env.env, GymRegistryEnv)
    obs = env.reset()
    assert obs.shape == (4,)
    obs, reward, done, _ = env.step(env.action_space.sample())
    assert obs.shape == (4,) and reward == 1.0
    env.close()


def test_cartpole_is_seeded_with_habitat_seed():
    starts = [build_env(_config("CartPole-v1", seed=s), 0).reset() for s in (3, 3, 4)]
    np.testing.assert_array_equal(starts[0], starts[1])
    assert not np.array_equal(starts[0], starts[2])


def test_doom_gets_resolution_and_frame_skip():
    cfg = _config(embedded={"resolution": [36, 48], "frame_skip": 2})
    env = build_env(cfg, env_index=0)
    assert isinstance(env.env, GymRegistryEnv)
    assert env.observation_space["rgb"].shape == (36, 48, 3)
    assert env.reset()["rgb"].shape == (36, 48, 3)
    assert _doom(env).frame_skip == 2
    env.close()
    # The registry entry keeps its defaults for a plain gym.make afterwards.
    plain = gym.make("habitat_ver/DoomMyWayHome-v0")
    assert plain.observation_space["rgb"].shape == (72, 96, 3)


def test_upstream_config_without_section_uses_defaults():
    env = build_env(_config(), env_index=5)
    default = EmbeddedEnvConfig()
    assert env.observation_space["rgb"].shape == (*default.resolution, 3)
    assert _doom(env).frame_skip == default.frame_skip
    assert not isinstance(env.env, StragglerWrapper)


def test_scenario_mix_is_dealt_out_by_env_index():
    cfg = _config(embedded={"scenarios": MIX})
    assert [scenario_for(cfg, i) for i in range(6)] == MIX + MIX[:2]
    names = [_doom(build_env(cfg, i)).scenario_name for i in (0, 3, 5)]
    assert names == ["my_way_home", "deathmatch_bots", "health_gathering"]


def test_without_mix_every_env_runs_the_task_id():
    cfg = _config("habitat_ver/DoomDefendTheCenter-v0", embedded={})
    assert {scenario_for(cfg, i) for i in range(4)} == {"habitat_ver/DoomDefendTheCenter-v0"}


def test_straggler_wrapper_iff_enabled(monkeypatch):
    from habitat_ver.envs import straggler as straggler_module

    slept = []
    monkeypatch.setattr(straggler_module.time, "sleep", slept.append)
    straggler = {
        "enabled": True,
        "speed_factor_min": 2.0,
        "speed_factor_max": 2.0,
        "jitter": 0.0,
        "long_step_prob": 0.0,
        "base_step_seconds": 0.01,
        "slow_env_indices": [1],
        "slow_factor": 3.0,
    }
    cfg = _config("CartPole-v1", embedded={"straggler": straggler})
    fast, slow = build_env(cfg, 0), build_env(cfg, 1)
    assert isinstance(fast.env, StragglerWrapper) and isinstance(fast.env.env, GymRegistryEnv)
    assert (fast.speed_factor, slow.speed_factor) == (2.0, 6.0)
    fast.reset()
    slow.reset()
    fast.step(0)
    slow.step(0)
    # 2 * 0.01 s and 3 * 2 * 0.01 s
    assert slept == pytest.approx([0.02, 0.06])
    off = _config("CartPole-v1", embedded={"straggler": {"enabled": False}})
    assert isinstance(build_env(off, 0).env, GymRegistryEnv)


def test_each_env_names_its_episodes_apart_for_the_evaluator():
    # habitat's evaluator keys episodes by (scene_id, episode_id): envs must
    # not share a key, and each reset starts a new one.
    cfg = _config("CartPole-v1")
    envs = [build_env(cfg, i) for i in (0, 1)]
    keys = []
    for env in envs:
        for _ in range(2):
            env.reset()
            episode = env.current_episode
            keys.append((episode.scene_id, episode.episode_id))
    assert keys == [
        ("CartPole-v1", "env0-1"),
        ("CartPole-v1", "env0-2"),
        ("CartPole-v1", "env1-1"),
        ("CartPole-v1", "env1-2"),
    ]
    assert envs[0].number_of_episodes == -1  # unknown: test_episode_count decides
    assert envs[0].original_action_space == envs[0].action_space


def test_other_env_tasks_defer_to_habitat(monkeypatch):
    from habitat_ver.envs import builder

    seen = []
    monkeypatch.setattr(builder, "make_gym_from_config", lambda c: seen.append(c) or "env")
    cfg = _config(embedded={"scenarios": MIX})
    cfg.habitat.env_task = "GymHabitatEnv"
    assert build_env(cfg, 2) == "env"
    assert seen == [cfg]  # the config passed on unchanged


def test_a_habitat_task_env_is_a_straggler_when_they_are_on(monkeypatch):
    from habitat_ver.envs import builder

    monkeypatch.setattr(builder, "make_gym_from_config", lambda c: gym.make("CartPole-v1"))
    straggler = {"enabled": True, "speed_factor_max": 1.0, "slow_env_indices": [3]}
    cfg = _config(embedded={"scenarios": MIX, "straggler": straggler})
    cfg.habitat.env_task = "GymHabitatEnv"
    fast, slow = build_env(cfg, 2), build_env(cfg, 3)
    assert isinstance(fast, StragglerWrapper) and isinstance(slow, StragglerWrapper)
    # Global index 3 is the slow one: 10 times the factor of 1.
    assert (fast.speed_factor, slow.speed_factor) == (1.0, 10.0)
    assert fast.env.spec.id == "CartPole-v1"  # habitat's env, not a scenario of the mix


@pytest.mark.multiproc
def test_vector_env_workers_build_the_mix():
    from habitat_ver.envs.factory import VerVectorEnvFactory

    cfg = _config(embedded={"scenarios": MIX[2:], "resolution": [24, 32]})
    cfg.habitat_baselines.num_environments = 2
    cfg.habitat.task = {
        "measurements": {},
        "rank0_measure_names": [],
        "rank0_env0_measure_names": [],
    }
    envs = VerVectorEnvFactory().construct_envs(cfg)
    try:
        observations = envs.reset()
        names = envs.call(["scenario_name"] * 2)
    finally:
        envs.close()
    assert [obs["rgb"].shape for obs in observations] == [(24, 32, 3)] * 2
    assert names == ["defend_the_center", "deathmatch_bots"]


class MarkedFactory(VerVectorEnvFactory):
    """Builds our envs and marks each: the user's own wrapper, in small."""

    @staticmethod
    def make_env(config, env_index):
        env = VerVectorEnvFactory.make_env(config, env_index)
        env.built_by = ("MarkedFactory", env_index)
        return env


def _factory_config(target, trainer="ver"):
    cfg = _config("CartPole-v1")
    cfg.habitat_baselines.num_environments = 2
    cfg.habitat_baselines.trainer_name = trainer
    cfg.habitat_baselines.vector_env_factory = {"_target_": target}
    cfg.habitat.task = {"rank0_measure_names": [], "rank0_env0_measure_names": []}
    cfg.habitat.task.measurements = {}
    return cfg


def test_ver_and_appo_env_workers_build_through_the_configured_factory():
    # They used to call build_env directly: a factory's wrapper applied under
    # ddppo and evaluation, and silently not under ver and appo.
    builders = env_builders(_factory_config(f"{__name__}.MarkedFactory"))
    assert [index for index, _ in builders] == [0, 1]
    for index, build in builders:
        shipped = pickle.loads(pickle.dumps(build))  # as the worker processes get it
        assert shipped().built_by == ("MarkedFactory", index)


def test_a_factory_the_env_workers_cannot_use_is_refused():
    cfg = _factory_config(
        "habitat_baselines.common.habitat_env_factory.HabitatVectorEnvFactory", "appo"
    )
    with pytest.raises(
        ConfigError, match=r"HabitatVectorEnvFactory' is not allowed for trainer 'appo'"
    ):
        env_builders(cfg)


def test_a_habitat_task_is_described_by_its_task_and_simulator():
    # Messages said "environment 0 (global index 0, )": habitat tasks have no gym id.
    cfg = OmegaConf.create(
        {
            "habitat": {
                "env_task": "GymHabitatEnv",
                "env_task_gym_id": "",
                "simulator": {"type": "Sim-v0"},
            },
            "habitat_baselines": {},
        }
    )
    assert scenario_for(cfg, 0) == "GymHabitatEnv on Sim-v0"


class _Sized(gym.Env):
    """A gym env with constructor arguments, registered below."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, size=3, *, goal=1.0):
        self.size, self.goal = size, goal


gym.register(id="test_builder/Sized-v0", entry_point=_Sized, kwargs={"goal": 2.0})


def test_gym_kwargs_reach_the_constructor_on_top_of_the_registered_ones():
    env = build_env(_config("test_builder/Sized-v0", embedded={"gym_kwargs": {"size": 5}}), 0)
    assert (env.unwrapped.size, env.unwrapped.goal) == (5, 2.0)
    env = build_env(_config("test_builder/Sized-v0", embedded={"gym_kwargs": {"goal": 0.5}}), 0)
    assert (env.unwrapped.size, env.unwrapped.goal) == (3, 0.5)
    # The registry entry is left as registered.
    assert gym.envs.registry.env_specs["test_builder/Sized-v0"].kwargs == {"goal": 2.0}


def test_doom_gets_gym_kwargs_next_to_resolution():
    embedded = {"resolution": [36, 48], "gym_kwargs": {"episode_timeout": 40}}
    env = build_env(_config(embedded=embedded), env_index=0)
    assert env.reset()["rgb"].shape == (36, 48, 3)
    # 40 tics at frame_skip 4: standing still, the episode ends at step 10.
    steps, done = 0, False
    while not done:
        _, _, done, _ = env.step(0)
        steps += 1
    assert steps == 10
    env.close()


def test_gym_kwargs_reach_an_id_registered_by_a_dependency(tmp_path, monkeypatch):
    # In an env worker the id exists only once habitat.env_task_gym_dependencies
    # are imported, which habitat's GymRegistryEnv does after the builder.
    (tmp_path / "sized_later.py").write_text(
        "import gym\n"
        "class Sized(gym.Env):\n"
        "    def __init__(self, size=3):\n"
        "        self.size = size\n"
        "gym.register(id='test_builder/SizedLater-v0', entry_point=Sized)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = _config("test_builder/SizedLater-v0", embedded={"gym_kwargs": {"size": 7}})
    config.habitat.env_task_gym_dependencies.append("sized_later")
    assert "test_builder/SizedLater-v0" not in gym.envs.registry.env_specs
    assert build_env(config, env_index=0).unwrapped.size == 7
