"""habitat's single-agent manager with appo's storage.

The storage is appo's trajectory slots
(:class:`~habitat_ver.system.appo_buffers.TrajectoryBuffers`), not a
lock-step ``RolloutStorage``; the updater is the configured one (our
``PPOUpdater``: the shared update loop, its optimiser, learned entropy
coefficient, value clipping, ...), whose targets step the trainer sets to the
run's return estimator (``auto``: V-trace).
"""

from typing import Any

from habitat_baselines.rl.ppo.single_agent_access_mgr import SingleAgentAccessMgr

from habitat_ver.system.appo_buffers import TrajectoryBuffers

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
