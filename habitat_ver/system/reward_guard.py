"""Non-finite rewards: counted, learnt as 0, and fatal past a limit.

An env that returns a NaN or infinite reward is broken, but one bad step in a
long run should not end it. Upstream replaces such rewards silently (VER's env
worker with -1); here each one is counted (logged as
``system/nonfinite_rewards``), learnt on as 0, and once more than
``habitat_baselines.rl.max_nonfinite_rewards`` were seen the run stops with an
error naming the env.
"""

from typing import Any, Callable

import torch
from torch import Tensor

__all__ = [
    "DEFAULT_MAX_NONFINITE_REWARDS",
    "NonFiniteRewardError",
    "NonFiniteRewards",
    "max_nonfinite_rewards",
]

# Used where a config has no rl.max_nonfinite_rewards (upstream's schema).
DEFAULT_MAX_NONFINITE_REWARDS = 100
CONFIG_KEY = "habitat_baselines.rl.max_nonfinite_rewards"


class NonFiniteRewardError(RuntimeError):
    """More non-finite rewards than the config allows."""


def max_nonfinite_rewards(config: Any) -> int:
    """The configured limit, or the default under upstream's schema."""
    return int(
        config.habitat_baselines.rl.get("max_nonfinite_rewards", DEFAULT_MAX_NONFINITE_REWARDS)
    )


class NonFiniteRewards:
    """Counts the non-finite rewards of one trainer's envs.

    Args:
        limit: how many are tolerated in the whole run; one more raises.
        describe: env index -> how the error names it.

    Attributes:
        count: non-finite rewards seen so far.
    """

    def __init__(self, limit: int, describe: Callable[[int], str] = str) -> None:
        self.limit = int(limit)
        self.count = 0
        self._describe = describe

    def clean(self, env_ids: Tensor, rewards: Tensor) -> Tensor:
        """``rewards`` with non-finite values replaced by 0 (a new tensor).

        Args:
            env_ids: the env of each reward.
            rewards: one reward per env.

        Raises:
            NonFiniteRewardError: once the run's count exceeds the limit,
                naming the env and its reward.

        Shapes:
            env_ids: ``[n]``; rewards: ``[n]`` or ``[n, 1]``; returns as rewards.
        """
        bad = ~torch.isfinite(rewards)
        if not bool(bad.any()):
            return rewards.clone()
        self.count += int(bad.sum())
        if self.count > self.limit:
            row = int(torch.nonzero(bad.view(-1))[0])
            env = int(env_ids.view(-1)[row])
            raise NonFiniteRewardError(
                f"environment {self._describe(env)} returned reward "
                f"{float(rewards.view(-1)[row])}: {self.count} non-finite rewards in "
                f"this run, more than {CONFIG_KEY}={self.limit} allows (raise it to "
                "tolerate more; each is learnt as 0)"
            )
        return torch.where(bad, torch.zeros_like(rewards), rewards)
