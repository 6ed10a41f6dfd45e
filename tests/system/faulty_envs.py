"""Envs that raise or hang at their third step, for the failure tests, and
CartPoles cut short by gym's time limit (not collected).

Importing it registers the gym ids ``RaisesOnThirdStep-v0``,
``HangsOnThirdStep-v0``, ``HangsWhileBuilt-v0``, ``CutAt3CartPole-v0``, ``CutAt5CartPole-v0`` and
``RecordsCloseCartPole-v0``.
"""

import os
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


class HangsWhileBuilt(gym.Wrapper):
    """Its construction never returns (a simulator stuck loading its scene)."""

    def __init__(self):
        time.sleep(3600)


register(id="HangsWhileBuilt-v0", entry_point=HangsWhileBuilt)


# CartPole never falls within 5 steps, so every episode of these ends by gym's
# TimeLimit cut, whose info alone carries ``TimeLimit.truncated``.
for _cut in (3, 5):
    register(
        id=f"CutAt{_cut}CartPole-v0",
        entry_point="gym.envs.classic_control:CartPoleEnv",
        max_episode_steps=_cut,
    )


class RecordsCloseCartPole(gym.Wrapper):
    """CartPole whose ``close`` appends its process id to ``closed.txt`` in
    the working directory: which envs were shut down, not just killed."""

    def __init__(self):
        super().__init__(gym.make("CartPole-v1"))

    def close(self):
        with open("closed.txt", "a") as log:
            log.write(f"{os.getpid()}\n")
        return super().close()


register(id="RecordsCloseCartPole-v0", entry_point=RecordsCloseCartPole)
