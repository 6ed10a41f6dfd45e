"""habitat's single-agent manager with appo's storage and targets step.

The storage is appo's trajectory slots
(:class:`~habitat_ver.system.appo_buffers.TrajectoryBuffers`), not a
lock-step ``RolloutStorage``; the updater is the configured one (our
``PPOUpdater``: the shared update loop, its optimiser, learned entropy
coefficient, value clipping, ...) with V-trace as its targets step.
"""

from typing import Any, cast

from habitat_baselines.rl.ppo.single_agent_access_mgr import SingleAgentAccessMgr

from habitat_ver.system.appo_buffers import TrajectoryBuffers
from habitat_ver.updaters.ppo import PPOUpdater
from habitat_ver.updaters.targets import VTraceTargets

__all__ = ["AppoAgentAccessMgr", "num_trajectory_slots"]


def num_trajectory_slots(config: Any, num_envs: int) -> int:
    """``rl.appo.num_trajectory_slots``, 0 resolved to ``2 * batch + num_envs``."""
    appo = config.habitat_baselines.rl.appo
    batch = appo.batch_trajectories or num_envs
    return appo.num_trajectory_slots or 2 * batch + num_envs


class AppoAgentAccessMgr(SingleAgentAccessMgr):
    """``SingleAgentAccessMgr`` whose storage is appo's trajectory slots."""

    def _create_storage(
        self,
        num_envs: int,
        env_spec: Any,
        actor_critic: Any,
        policy_action_space: Any,
        config: Any,
        device: Any,
    ) -> Any:  # appo's storage, not a habitat Storage
        return TrajectoryBuffers.allocate(
            num_trajectory_slots(config, num_envs),
            config.habitat_baselines.rl.ppo.num_steps,
            env_spec.observation_space,
            env_spec.action_space,
            (actor_critic.num_recurrent_layers, actor_critic.recurrent_hidden_size),
        )

    def _create_updater(self, actor_critic: Any) -> Any:
        updater = cast(PPOUpdater, super()._create_updater(actor_critic))
        updater.use_targets(VTraceTargets.from_config(self._config))
        return updater
