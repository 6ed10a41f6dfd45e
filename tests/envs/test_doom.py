"""DoomEnv: spaces, rendering size, rewards, termination, seeding, gym ids."""

import gym
import numpy as np
import pytest

import habitat_ver  # noqa: F401  (registers the gym ids)
from habitat_ver.envs import DOOM_IDS
from habitat_ver.envs.doom import (
    ACTIONS,
    ENGINE_FOLDER,
    DoomEnv,
    _resize_area_numpy,
    resize_area,
    screen_size_for,
)

SCENARIOS = ["my_way_home", "health_gathering", "defend_the_center", "deathmatch_bots"]


def _run_episode(env, actions):
    rewards, obs, done = [], None, False
    for action in actions:
        obs, reward, done, _ = env.step(action)
        rewards.append(reward)
        if done:
            break
    return obs, rewards, done


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_episode_runs_to_its_timeout(scenario):
    # 80 tics / frame_skip 4 = 20 steps, unless the player dies first.
    env = DoomEnv(scenario, resolution=(30, 40), frame_skip=4, episode_timeout=80)
    env.seed(1)
    obs = env.reset()
    assert set(obs) == {"rgb"}
    assert obs["rgb"].shape == (30, 40, 3) and obs["rgb"].dtype == np.uint8
    assert env.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    last, rewards, done = _run_episode(env, rng.integers(0, len(ACTIONS), 40))
    env.close()
    assert done, "episode did not end at episode_timeout"
    assert len(rewards) <= 20
    assert np.isfinite(rewards).all()
    assert last["rgb"].shape == (30, 40, 3)


def test_the_engine_folder_exists_before_the_engine_starts(tmp_path, monkeypatch):
    # Envs starting at once in a new folder raced on creating ./_vizdoom/; the
    # loser's worker died of SIGSEGV ("Failed to create ./_vizdoom/ directory:
    # File exists"). Made before init, there is nothing to race on.
    import vizdoom

    seen = []

    class Game(vizdoom.DoomGame):
        def init(self):
            seen.append((tmp_path / ENGINE_FOLDER).is_dir())
            return super().init()

    monkeypatch.chdir(tmp_path)  # a new folder, as a new user's
    monkeypatch.setattr(vizdoom, "DoomGame", Game)
    env = DoomEnv("my_way_home", resolution=(30, 40))
    try:
        env.reset()
    finally:
        env.close()
    assert seen == [True]


def test_spaces_match_the_requested_resolution():
    env = DoomEnv("my_way_home", resolution=(72, 96))
    assert env.observation_space["rgb"].shape == (72, 96, 3)
    assert env.observation_space["rgb"].dtype == np.uint8
    assert env.action_space == gym.spaces.Discrete(len(ACTIONS)) == gym.spaces.Discrete(9)


def test_frames_are_rendered_not_blank():
    env = DoomEnv("defend_the_center", resolution=(48, 64))
    frame = env.reset()["rgb"]
    env.close()
    assert frame.std() > 5.0  # a real view, not a constant image


def test_same_seed_gives_same_frames():
    frames = []
    for _ in range(2):
        env = DoomEnv("health_gathering", resolution=(24, 32), episode_timeout=60)
        env.seed(42)
        env.reset()
        obs, _, _ = _run_episode(env, [1, 2, 1, 3, 1, 1])
        frames.append(obs["rgb"])
        env.close()
    np.testing.assert_array_equal(frames[0], frames[1])


def test_health_gathering_rewards_survival():
    # health_gathering.cfg: living_reward 1 per tic, so 4 per step at frame_skip 4.
    env = DoomEnv("health_gathering", resolution=(24, 32), frame_skip=4)
    env.reset()
    _, reward, done, _ = env.step(0)
    env.close()
    assert reward == 4.0 and not done


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="scenario='nope'"):
        DoomEnv("nope")
    with pytest.raises(ValueError, match="frame_skip=0"):
        DoomEnv("my_way_home", frame_skip=0)
    env = DoomEnv("my_way_home", resolution=(24, 32))
    env.reset()
    with pytest.raises(ValueError, match="action=9"):
        env.step(9)
    env.close()


def test_screen_size_is_the_smallest_covering_one():
    assert screen_size_for(72, 96) == (160, 120)
    assert screen_size_for(120, 161) == (200, 150)
    assert screen_size_for(240, 320) == (320, 240)
    with pytest.raises(ValueError, match="larger than the largest"):
        screen_size_for(481, 640)


def test_numpy_resize_is_an_area_average():
    # 4x4 -> 2x2: each output pixel is the mean of a 2x2 block.
    frame = np.arange(16, dtype=np.uint8).reshape(4, 4, 1)
    out = _resize_area_numpy(frame, 2, 2)
    # top-left block {0, 1, 4, 5} -> 2.5 -> rounds to 2 (half to even)
    assert out[..., 0].tolist() == [[2, 4], [10, 12]]
    big = np.random.default_rng(0).integers(0, 256, (120, 160, 3)).astype(np.uint8)
    cv_like = resize_area(big, 60, 80).astype(int)
    assert np.abs(_resize_area_numpy(big, 60, 80).astype(int) - cv_like).max() <= 1


@pytest.mark.parametrize("gym_id", sorted(DOOM_IDS))
def test_gym_ids_make_doom_envs(gym_id):
    env = gym.make(gym_id, resolution=(24, 32), frame_skip=2)
    assert env.observation_space["rgb"].shape == (24, 32, 3)
    assert env.unwrapped.scenario_name == DOOM_IDS[gym_id]
    assert env.unwrapped.frame_skip == 2
    env.close()


def test_reimporting_the_registration_is_harmless():
    import importlib

    import habitat_ver.envs as envs

    importlib.reload(envs)
    assert all(gym_id in gym.envs.registry.env_specs for gym_id in DOOM_IDS)
