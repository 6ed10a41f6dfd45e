"""StepDelaySampler's distribution and StragglerWrapper's waiting."""

import gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

import habitat_ver  # noqa: F401  (sim-free mode before gym/habitat)
from habitat_ver.config.embedded_env import StragglerConfig
from habitat_ver.envs import straggler as straggler_module
from habitat_ver.envs.straggler import StepDelaySampler, StragglerWrapper


def _config(**overrides):
    cfg = OmegaConf.structured(StragglerConfig)
    for key, value in overrides.items():
        cfg[key] = value
    return cfg


def test_same_seed_and_index_give_the_same_delays():
    cfg = _config(seed=7, long_step_prob=0.2)
    a = StepDelaySampler(cfg, env_index=3)
    b = StepDelaySampler(cfg, env_index=3)
    assert a.speed_factor == b.speed_factor
    assert [a.next_delay() for _ in range(50)] == [b.next_delay() for _ in range(50)]


def test_other_seed_or_index_gives_other_delays():
    cfg = _config(seed=7)
    reference = StepDelaySampler(cfg, 3)
    other_index = StepDelaySampler(cfg, 4)
    other_seed = StepDelaySampler(cfg, 3, seed=8)
    assert other_index.speed_factor != reference.speed_factor
    assert other_seed.speed_factor != reference.speed_factor
    assert other_seed.next_delay() != reference.next_delay()


@settings(max_examples=30, deadline=None)
@given(
    low=st.floats(0.1, 5.0),
    ratio=st.floats(1.0, 20.0),
    seed=st.integers(0, 2**31 - 1),
    env_index=st.integers(0, 1000),
)
def test_speed_factor_within_bounds(low, ratio, seed, env_index):
    cfg = _config(speed_factor_min=low, speed_factor_max=low * ratio, seed=seed)
    factor = StepDelaySampler(cfg, env_index).speed_factor
    assert low <= factor <= low * ratio


def test_speed_factor_is_log_uniform():
    # log(factor) ~ U(log 1, log 16) has mean log(16) / 2 = log 4, so the
    # median factor over many envs is 4 (not the arithmetic midpoint 8.5).
    cfg = _config(speed_factor_min=1.0, speed_factor_max=16.0, seed=1)
    logs = np.log([StepDelaySampler(cfg, i).speed_factor for i in range(4000)])
    assert logs.mean() == pytest.approx(np.log(4.0), abs=0.05)
    assert logs.std() == pytest.approx(np.log(16.0) / np.sqrt(12.0), rel=0.05)


def test_slow_env_indices_get_the_slow_factor():
    # With min == max the drawn factor is exactly 2; the chosen env is 5x that.
    cfg = _config(
        speed_factor_min=2.0, speed_factor_max=2.0, slow_env_indices=[1, 5], slow_factor=5.0
    )
    assert StepDelaySampler(cfg, 0).speed_factor == 2.0
    assert StepDelaySampler(cfg, 1).speed_factor == 10.0
    assert StepDelaySampler(cfg, 5).speed_factor == 10.0


def test_no_jitter_no_long_steps_gives_constant_delay():
    # 3 * 0.01 s every step, exactly.
    cfg = _config(
        speed_factor_min=3.0,
        speed_factor_max=3.0,
        base_step_seconds=0.01,
        jitter=0.0,
        long_step_prob=0.0,
    )
    sampler = StepDelaySampler(cfg, 0)
    delays = [sampler.next_delay() for _ in range(20)]
    assert delays == pytest.approx([0.03] * 20, rel=1e-12)


def test_empirical_mean_matches_analytic_mean():
    # mean = s * (base + p * long) = 2 * (0.004 + 0.05 * 0.1) = 0.018 s.
    cfg = _config(
        speed_factor_min=2.0,
        speed_factor_max=2.0,
        base_step_seconds=0.004,
        jitter=0.5,
        long_step_prob=0.05,
        long_step_seconds=0.1,
        seed=11,
    )
    sampler = StepDelaySampler(cfg, 0)
    assert sampler.mean_delay() == pytest.approx(0.018)
    delays = np.array([sampler.next_delay() for _ in range(40000)])
    # Standard error of the mean here is about 0.0022 / sqrt(4e4) ~ 1.1e-4 s.
    assert delays.mean() == pytest.approx(0.018, abs=5e-4)
    assert (delays >= 0).all()
    # Long steps: a share of long_step_prob of all steps exceed 0.1 s * 2.
    assert (delays >= 0.2).mean() == pytest.approx(0.05, abs=0.005)


def test_jitter_is_lognormal_with_mean_one():
    # delay / (s * base) = exp(N(-sigma^2/2, sigma^2)): mean 1, log-std sigma.
    cfg = _config(
        speed_factor_min=1.0,
        speed_factor_max=1.0,
        base_step_seconds=0.01,
        jitter=0.3,
        long_step_prob=0.0,
        seed=5,
    )
    sampler = StepDelaySampler(cfg, 2)
    ratios = np.array([sampler.next_delay() / 0.01 for _ in range(40000)])
    assert ratios.mean() == pytest.approx(1.0, abs=0.01)
    assert np.log(ratios).std() == pytest.approx(0.3, rel=0.03)


class _CountingEnv(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.steps = 0

    def reset(self):
        return np.zeros(2, np.float32)

    def step(self, action):
        self.steps += 1
        return np.full(2, self.steps, np.float32), 1.5, self.steps == 3, {"k": action}


def test_wrapper_sleeps_the_sampled_delays(monkeypatch):
    slept = []
    monkeypatch.setattr(straggler_module.time, "sleep", slept.append)
    cfg = _config(
        speed_factor_min=1.0, speed_factor_max=3.0, jitter=0.4, long_step_prob=0.3, seed=4
    )
    env = StragglerWrapper(_CountingEnv(), cfg, env_index=6)
    reference = StepDelaySampler(cfg, 6)
    env.reset()
    env.reset()  # resets are not delayed
    assert slept == []
    for _ in range(3):
        env.step(1)
    expected = [reference.next_delay() for _ in range(3)]
    assert slept == pytest.approx(expected)
    assert env.total_delay_s == pytest.approx(sum(expected))
    assert env.speed_factor == reference.speed_factor


def test_wrapper_passes_step_results_through(monkeypatch):
    monkeypatch.setattr(straggler_module.time, "sleep", lambda seconds: None)
    env = StragglerWrapper(_CountingEnv(), _config(), env_index=0)
    obs, reward, done, info = env.step(0)
    assert obs.tolist() == [1.0, 1.0]
    assert reward == 1.5 and done is False and info == {"k": 0}
    env.step(0)
    assert env.step(1)[2] is True
    assert env.observation_space == env.env.observation_space


def test_zero_delay_does_not_call_sleep(monkeypatch):
    slept = []
    monkeypatch.setattr(straggler_module.time, "sleep", slept.append)
    cfg = _config(base_step_seconds=0.0, long_step_prob=0.0)
    env = StragglerWrapper(_CountingEnv(), cfg, env_index=0)
    env.step(0)
    assert slept == [] and env.total_delay_s == 0.0
