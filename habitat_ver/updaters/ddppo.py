"""The distributed flavour of :class:`~habitat_ver.updaters.ppo.PPOUpdater`.

Upstream's ``DecentralizedDistributedMixin`` wraps the actor-critic in
``DistributedDataParallel`` (gradients averaged with an AllReduce mean, so every
rank's rollout weighs the same) and computes advantage statistics across ranks;
mixing it into our updater keeps our loss hooks unchanged.  habitat's
``SingleAgentAccessMgr`` picks this class through
``habitat_baselines.distrib_updater_name`` whenever the run is distributed.
"""

from habitat_baselines.rl.ddppo.algo.ddppo import DecentralizedDistributedMixin

from habitat_ver.updaters.ppo import PPOUpdater

__all__ = ["DDPPOUpdater"]


class DDPPOUpdater(DecentralizedDistributedMixin, PPOUpdater):
    """``PPOUpdater`` with DD-PPO's gradient averaging across ranks."""
