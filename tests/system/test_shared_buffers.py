"""Shared rows: sentinels, info metrics, the serial pool's bookkeeping."""

import math

import gym
import numpy as np
import torch
from gym import spaces

from habitat_ver.system.shared_buffers import EnvSharedBuffers, InfoColumns
from habitat_ver.system.per_env_pool import PerEnvPool


class CountingEnv(gym.Env):
    """Obs = step count; episode of 3 steps; info reports metrics."""

    observation_space = spaces.Box(0, 100, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self):
        self.t = 0
        return np.zeros(1, np.float32)

    def step(self, action):
        self.t += 1
        info = {"success": float(self.t == 3), "nested": {"dist": 0.5 * self.t}, "text": "x"}
        return np.full(1, self.t, np.float32), float(action), self.t == 3, info


def test_fresh_buffers_hold_sentinels():
    buffers = EnvSharedBuffers.allocate(
        3, spaces.Dict({"obs": CountingEnv.observation_space}), spaces.Discrete(2)
    )
    assert torch.isnan(buffers.rewards).all() and torch.isnan(buffers.infos).all()
    assert (buffers.actions == -1).all()
    assert all(t.is_shared() for t in buffers.tensors())


def test_info_columns_are_stable_and_announce_new_names():
    columns = InfoColumns()
    assert columns.values({"b": 2.0, "a": 1.0}) == ([1.0, 2.0], ["a", "b"])
    row, names = columns.values({"a": 3.0})
    assert names is None and row[0] == 3.0 and math.isnan(row[1])
    assert columns.values({"c": 5.0, "a": 0.0})[1] == ["a", "b", "c"]


def test_serial_pool_steps_writes_rows_and_info_metrics():
    with PerEnvPool([CountingEnv, CountingEnv], serial=True) as pool:
        pool.reset()
        for t in (1, 2, 3):
            pool.send_actions(torch.tensor([0, 1]), torch.tensor([[1], [0]]))
            assert sorted(pool.wait_ready(8)) == [0, 1]
            obs, rewards, dones, infos = pool.read(torch.tensor([0, 1]))
            assert rewards.tolist() == [1.0, 0.0]  # reward = action taken
            assert dones.tolist() == [t == 3] * 2
        assert pool.info_names[0] == ["nested.dist", "success"]
        # After the episode's last step: its metrics, then the reset observation.
        assert infos[0].tolist()[:2] == [1.5, 1.0]
        assert obs["obs"][:, 0].tolist() == [0.0, 0.0]
