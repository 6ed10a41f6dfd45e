"""Envs that raise or hang at their third step, for the failure tests (not collected).

Importing it registers the gym ids ``RaisesOnThirdStep-v0`` and ``HangsOnThirdStep-v0``.
"""

import time

import gym
from gym.envs.registration import register


class RaisesOnThirdStep(gym.Wrapper):
    def __init__(self):
        super().__init__(gym.make("CartPole-v1"))
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if self.steps == 3:
            raise ValueError("boom at step 3")
        return self.env.step(action)


register(id="RaisesOnThirdStep-v0", entry_point=RaisesOnThirdStep)


class HangsOnThirdStep(RaisesOnThirdStep):
    """Its third step never returns (a deadlocked simulator)."""

    def step(self, action):
        self.steps += 1
        if self.steps == 3:
            time.sleep(3600)
        return self.env.step(action)


register(id="HangsOnThirdStep-v0", entry_point=HangsOnThirdStep)
