"""An env that reports the torch threads of the process stepping it (not collected).

Its observation holds a 128x128 RGB frame, large enough that copying it into
a shared tensor wakes torch's intra-op thread pool where that pool has more
than one thread, and ``probe = [torch threads, OS threads of the process]``,
read at each step before the frame is copied.
"""

import os

import gym
import numpy as np
import torch
from gym import spaces

FRAME = (128, 128, 3)


def os_threads() -> int:
    """Threads of this process, as the kernel lists them."""
    return len(os.listdir("/proc/self/task"))


class ThreadProbeEnv(gym.Env):
    observation_space = spaces.Dict(
        {
            "rgb": spaces.Box(0, 255, FRAME, np.uint8),
            "probe": spaces.Box(0, 1e6, (2,), np.float32),
        }
    )
    action_space = spaces.Discrete(2)

    def __init__(self, *args):
        self._frame = np.random.default_rng(0).integers(0, 255, FRAME, dtype=np.uint8)

    def _observation(self):
        probe = np.array([torch.get_num_threads(), os_threads()], dtype=np.float32)
        return {"rgb": self._frame.copy(), "probe": probe}

    def reset(self):
        return self._observation()

    def step(self, action):
        return self._observation(), 0.0, False, {}
