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


def test_env_row_writes_only_its_row_casting_as_torch_copy():
    space = spaces.Dict(
        {"rgb": spaces.Box(0, 255, (2, 3), np.uint8), "gps": spaces.Box(-1, 1, (2,), np.float32)}
    )
    buffers = EnvSharedBuffers.allocate(3, space, spaces.Box(-1, 1, (2,), np.float32))
    row = buffers.row(1)
    buffers.actions[1] = torch.tensor([0.25, -0.5])
    assert row.action.tolist() == [0.25, -0.5]  # a view of the shared row
    rgb = np.arange(6, dtype=np.int64).reshape(2, 3) * 40  # int64 -> uint8, as copy_
    row.write({"rgb": rgb, "gps": np.array([0.5, 2.0])}, 1.5, True, [7.0, 8.0])
    assert buffers.observations["rgb"][1].tolist() == [[0, 40, 80], [120, 160, 200]]
    assert buffers.observations["gps"][1].tolist() == [0.5, 2.0]
    assert buffers.rewards.tolist()[1] == 1.5 and buffers.dones.tolist() == [False, True, False]
    assert buffers.infos[1, :2].tolist() == [7.0, 8.0] and torch.isnan(buffers.infos[1, 2:]).all()
    # The other rows keep their sentinels.
    assert torch.isnan(buffers.rewards[[0, 2]]).all() and torch.isnan(buffers.infos[[0, 2]]).all()
    assert buffers.observations["rgb"][[0, 2]].sum() == 0
    # A later write without metrics clears the old ones.
    row.write({"rgb": rgb, "gps": np.zeros(2)}, 0.0, False)
    assert torch.isnan(buffers.infos[1]).all() and not buffers.dones[1]


def test_gather_copies_the_rows_of_ids_in_their_order():
    space = spaces.Dict({"obs": spaces.Box(0, 100, (2,), np.float32)})
    buffers = EnvSharedBuffers.allocate(4, space, spaces.Discrete(2))
    for i in range(4):
        buffers.row(i).write({"obs": np.full(2, 10.0 * i)}, float(i), i == 2, [float(-i)])
    obs, rewards, dones, infos = buffers.gather(torch.tensor([3, 0, 2]))
    assert obs["obs"][:, 0].tolist() == [30.0, 0.0, 20.0]
    assert rewards.tolist() == [3.0, 0.0, 2.0] and dones.tolist() == [False, False, True]
    assert infos[:, 0].tolist() == [-3.0, 0.0, -2.0]
    assert obs["obs"].dtype == torch.float32 and dones.dtype == torch.bool
    buffers.row(3).write({"obs": np.zeros(2)}, 9.0, False)
    assert obs["obs"][0, 0] == 30.0 and rewards[0] == 3.0  # copies, not views
