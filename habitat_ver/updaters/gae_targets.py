"""``gae`` (``ddppo``, ``ver``): Generalized Advantage Estimation over the rollout.

GAE(gamma, lambda) (Schulman et al. 2016, eq. 16) with habitat's keys:
``rl.ppo.gamma``, ``rl.ppo.tau`` (lambda) and ``rl.ppo.use_gae``.  The
arithmetic is :mod:`habitat_ver.algo.gae`'s, which agrees with
habitat-baselines' ``RolloutStorage.compute_returns`` bit for bit.
"""

from dataclasses import dataclass, replace
from typing import Any

from torch import Tensor

from habitat_ver.algo.gae import compute_discounted_returns, compute_gae
from habitat_ver.storage.return_steps import RolloutSteps
from habitat_ver.updaters.targets import RolloutTargets

__all__ = ["GAETargets"]


@dataclass
class GAETargets(RolloutTargets):
    """GAE returns of the rollout; advantages normalised over the rollout.

    Attributes:
        gamma: discount (``rl.ppo.gamma``).
        gae_lambda: GAE's lambda (habitat's ``rl.ppo.tau``).
        use_gae: ``rl.ppo.use_gae``; False: discounted returns bootstrapped
            with the critic (time-major steps: upstream's own loop; VER's
            sequences: GAE with lambda = 1, as VER's storage always did).

    The defaults are habitat's ``rl.ppo`` defaults.
    """

    gamma: float = 0.99
    gae_lambda: float = 0.95
    use_gae: bool = True

    # Upstream's RolloutStorage computes GAE itself with the same rl.ppo keys.
    upstream_storages_compute_these = True

    @classmethod
    def from_config(cls, config: Any) -> "GAETargets":
        """From the run's config (its ``habitat_baselines.rl.ppo``)."""
        return cls.from_ppo_config(config.habitat_baselines.rl.ppo)

    @classmethod
    def from_ppo_config(cls, ppo: Any) -> "GAETargets":
        """From a ``habitat_baselines.rl.ppo`` section."""
        return cls(
            gamma=float(ppo.gamma),
            gae_lambda=float(ppo.tau),  # habitat's `tau` is GAE's lambda
            use_gae=bool(ppo.use_gae),
        )

    def returns(self, steps: RolloutSteps) -> Tensor:
        if self.use_gae:
            _, returns = compute_gae(
                steps.rewards,
                steps.values,
                steps.dones,
                steps.bootstrap_values,
                gamma=self.gamma,
                gae_lambda=self.gae_lambda,
                **steps.truncation(),
            )
            return returns
        return compute_discounted_returns(
            steps.rewards,
            steps.dones,
            steps.bootstrap_values,
            gamma=self.gamma,
            **steps.truncation(),
        )

    def sequence_returns(self, steps: RolloutSteps) -> Tensor:
        # Without use_gae, VER's sequences take GAE with lambda = 1 (as VER's
        # storage always did), equal to the discounted returns up to rounding.
        gae = self if self.use_gae else replace(self, gae_lambda=1.0, use_gae=True)
        return RolloutTargets.sequence_returns(gae, steps)
