"""habitat's single-agent manager, building VER's storage with its options.

Upstream's ``SingleAgentAccessMgr._create_storage`` passes only the storage
contract's arguments; VER's storage also needs ``variable_experience`` (from
upstream's ``habitat_baselines.rl.ver``) and the importance-weight cap, so this
subclass overrides that one hook.
"""

from typing import Any

from habitat_baselines.common.baseline_registry import baseline_registry
from habitat_baselines.rl.ppo.single_agent_access_mgr import (
    SingleAgentAccessMgr,
    get_rollout_obs_space,
)


class VERAgentAccessMgr(SingleAgentAccessMgr):
    """``SingleAgentAccessMgr`` whose storage gets VER's options."""

    def _create_storage(
        self, num_envs: int, env_spec: Any, actor_critic: Any,
        policy_action_space: Any, config: Any, device: Any,
    ) -> Any:
        baselines = config.habitat_baselines
        storage = baseline_registry.get_storage(baselines.rollout_storage_name)(
            numsteps=baselines.rl.ppo.num_steps,
            num_envs=num_envs,
            observation_space=get_rollout_obs_space(
                env_spec.observation_space, actor_critic, config
            ),
            action_space=policy_action_space,
            actor_critic=actor_critic,
            is_double_buffered=False,
            variable_experience=baselines.rl.ver.variable_experience,
        )
        storage.to(device)
        return storage
