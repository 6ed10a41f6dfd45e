"""The grouped pool (APPO's): rollout workers, policy worker and trajectory slots.

Plumbing checked on a counting env whose observation is its step number, so
every trajectory can be checked step by step; failure and shutdown checked
in a fresh interpreter, as tests/system/test_per_env_pool.py does for VER.
"""

import functools
import math
import os
import subprocess
import sys
import time

import gym
import numpy as np
import pytest
import torch
from gym import spaces

from habitat_ver.policies.compact_policy import CompactPolicy
from habitat_ver.system.appo_buffers import SlotPool, TrajectoryBuffers
from habitat_ver.system.appo_policy_worker import PolicyWorker
from habitat_ver.system.grouped_pool import GroupedPool, split_groups
from habitat_ver.system.reward_guard import NonFiniteRewardError

EPISODE = 5  # the counting env's episode length


class CountingEnv(gym.Env):
    """Observation: the env's index * 1000 + its global step count; reward
    = that step count; episodes of EPISODE steps."""

    observation_space = spaces.Box(-1e9, 1e9, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, index: int):
        self.index, self.count, self.episode_step = index, 0, 0

    def _obs(self):
        return np.array([self.index * 1000 + self.count], dtype=np.float32)

    def reset(self):
        self.episode_step = 0
        return self._obs()

    def step(self, action):
        self.count += 1
        self.episode_step += 1
        return self._obs(), float(self.count), self.episode_step == EPISODE, {}


class NaNRewardEnv(CountingEnv):
    """A CountingEnv whose reward is NaN at every third step count."""

    def step(self, action):
        obs, reward, done, info = super().step(action)
        return obs, (math.nan if self.count % 3 == 0 else reward), done, info


class CutCountingEnv(CountingEnv):
    """A CountingEnv whose episode ends are reported as gym's TimeLimit cuts."""

    def step(self, action):
        obs, reward, done, info = super().step(action)
        return obs, reward, done, ({"TimeLimit.truncated": True} if done else info)


def _worker(num_envs=4, num_workers=2, T=4, env_cls=CountingEnv, **kwargs):
    pool = GroupedPool(
        [(i, functools.partial(env_cls, i)) for i in range(num_envs)],
        num_workers,
        num_groups=2,
        serial=True,
    )
    policy = CompactPolicy(pool.observation_space, pool.action_space, hidden_size=8)
    slots = 32
    trajectories = TrajectoryBuffers.allocate(
        slots, T, pool.observation_space, pool.action_space, (1, 8)
    )
    worker = PolicyWorker(
        pool, policy, trajectories, SlotPool(slots), torch.device("cpu"), **kwargs
    )
    return pool, worker, trajectories


def test_nonfinite_rewards_are_learnt_as_zero_then_fail_naming_the_env():
    # Env 1 of 2 pays NaN at counts 3 and 6 (learnt as 0); the third, at
    # count 9, exceeds max_nonfinite_rewards=2.
    pool, worker, traj = _worker(
        num_envs=2,
        num_workers=1,
        T=4,
        max_nonfinite_rewards=2,
        env_cls=lambda i: NaNRewardEnv(i) if i == 1 else CountingEnv(i),
    )
    pool.reset()
    worker.publish(worker.policy.state_dict(), 0)
    worker.start(pool.all_groups())
    try:
        with pytest.raises(
            NonFiniteRewardError,
            match=r"environment 1 returned reward nan: "
            r"3 non-finite",
        ):
            while True:
                worker.take_full()
    finally:
        pool.close()
    assert worker.nonfinite_rewards.count == 3
    # Env 1's first slot (counts 0..4): the reward after count 3 is 0.
    (first,) = [
        s
        for s in range(len(traj.env_ids))
        if int(traj.env_ids[s]) == 1 and float(traj.observations["obs"][s, 0, 0]) == 1000.0
    ]
    assert traj.rewards[first, :, 0].tolist() == [1.0, 2.0, 0.0, 4.0]


def test_groups_split_each_workers_envs_in_two():
    assert split_groups([4, 5, 6, 7], 2) == [[4, 5], [6, 7]]
    pool, _, _ = _worker(num_envs=8, num_workers=2)
    assert pool.groups == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    pool.close()


def test_trajectories_hold_consecutive_steps_and_the_bootstrap_observation():
    pool, worker, traj = _worker()
    T = traj.num_steps
    pool.reset()
    worker.publish(worker.policy.state_dict(), 0)
    worker.start(pool.all_groups())
    try:
        full = [worker.take_full() for _ in range(12)]
    finally:
        pool.close()
    by_env = {}
    for slot in full:
        env = int(traj.env_ids[slot])
        obs = traj.observations["obs"][slot, :, 0] - env * 1000
        # Step t sees count t0 + t; the bootstrap observation is count t0 + T.
        assert obs.tolist() == [obs[0].item() + t for t in range(T + 1)]
        # Reward after step t is the new count; the episode ends every 5 steps.
        assert traj.rewards[slot, :, 0].tolist() == (obs[1:]).tolist()
        assert traj.dones[slot, :, 0].tolist() == [int(c) % EPISODE == 0 for c in obs[1:]]
        # masks: False on the first observation of an episode.
        starts = [int(c) % EPISODE == 0 for c in obs]
        assert traj.masks[slot, :, 0].tolist() == [not s for s in starts]
        assert not torch.isnan(traj.behaviour_log_probs[slot]).any()
        assert traj.versions[slot].tolist() == [0] * T
        by_env.setdefault(env, []).append(int(obs[0]))
    # Each env's trajectories follow each other without a gap or overlap.
    for env, starts in by_env.items():
        assert starts == [T * k for k in range(len(starts))], env
    assert len(by_env) == 4


def test_policy_worker_acts_with_the_latest_published_version():
    pool, worker, traj = _worker()
    pool.reset()
    worker.publish(worker.policy.state_dict(), 0)
    worker.start(pool.all_groups())
    try:
        for version in range(1, 6):
            for _ in range(4):
                worker.slots.give_back([worker.take_full()])
            worker.publish(worker.policy.state_dict(), version)
        deadline = time.monotonic() + 60
        while not (worker.served and worker.served[-1][1] == 5):
            assert time.monotonic() < deadline, "version 5 never acted"
            time.sleep(0.005)
    finally:
        pool.close()
    published = list(worker.published)
    for seq, used in worker.served:
        latest = max(v for s, v in published if s < seq)
        assert used == latest  # never N - 1 here: publish and inference share a lock
    assert worker.served[-1][1] == 5


@pytest.mark.multiproc
@pytest.mark.parametrize("mode", ["processes", "serial"])
def test_failing_env_is_named_and_every_worker_is_gone(
    tmp_path, mode, processes_left, marked_scripts, shm_left_since
):
    script = marked_scripts("appo_faulty_run.py", "faulty_envs.py")
    marker_dir = script.parent
    shm_before = set(os.listdir("/dev/shm"))
    done = subprocess.run(
        [sys.executable, str(script), mode, str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=marker_dir,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    error = done.stdout
    assert "ERROR: environment 1 (global index 1, RaisesOnThirdStep-v0) failed" in error
    assert "all rollout workers were shut down" in error
    assert "ValueError: boom at step 3" in error  # the worker's traceback
    assert error.count("ERROR:") == 1
    assert processes_left(str(marker_dir)) == []
    assert shm_left_since(shm_before) == set()


@pytest.mark.multiproc
def test_a_rollout_worker_whose_env_never_finishes_building_is_named(
    tmp_path, processes_left, marked_scripts
):
    script = marked_scripts("appo_faulty_run.py", "faulty_envs.py")
    done = subprocess.run(
        [sys.executable, str(script), "hangs_while_built", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=script.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Two envs per rollout worker: worker 0 builds env 0, then env 1.
    assert done.stdout.startswith(
        "ERROR: nothing was heard from rollout workers [0] for 2 s while their envs were "
        "being built; all rollout workers were shut down. Their environments: "
        "0 (global index 0, CartPole-v1), 1 (global index 1, HangsWhileBuilt-v0)\n"
    ), done.stdout
    assert processes_left(str(script.parent)) == []


def test_time_limit_cuts_are_stored_with_the_trajectories():
    # Env 1 reports its episode ends (every 5 steps) as time-limit cuts; env 0
    # ends its episodes itself.
    pool, worker, traj = _worker(
        num_envs=2,
        num_workers=1,
        T=4,
        env_cls=lambda i: CutCountingEnv(i) if i == 1 else CountingEnv(i),
    )
    pool.reset()
    worker.publish(worker.policy.state_dict(), 0)
    worker.start(pool.all_groups())
    try:
        full = [worker.take_full() for _ in range(6)]
    finally:
        pool.close()
    batch = traj.batch(full)
    for column, slot in enumerate(full):
        ends = traj.dones[slot, :, 0]
        cuts = batch["truncated"][:, column, 0]
        assert cuts.tolist() == (ends.tolist() if int(traj.env_ids[slot]) == 1 else [False] * 4)
    assert int(batch["truncated"].sum()) >= 2
