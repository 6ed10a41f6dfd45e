"""A toy return estimator for the tests: what a new estimator needs is this
class (and one ``register_return_estimator`` call, made by each test)."""

import torch

from habitat_ver.updaters.targets import RolloutTargets


class RewardToGo(RolloutTargets):
    """Monte-Carlo, undiscounted, cut at the rollout's end, no bootstrap:
    ``R_t = r_t + (1 - done_t) R_{t+1}`` (time-major only: VER's sequences go
    through the base class's grid)."""

    @classmethod
    def from_config(cls, config):
        return cls()

    def returns(self, steps):
        returns = torch.empty_like(steps.rewards)
        following = torch.zeros_like(steps.bootstrap_values)
        for t in reversed(range(steps.rewards.shape[0])):
            following = steps.rewards[t] + (~steps.dones[t]) * following
            returns[t] = following
        return returns
