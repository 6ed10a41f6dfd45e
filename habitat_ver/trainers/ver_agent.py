"""habitat's single-agent manager, building VER's storage with its options.

Upstream's ``SingleAgentAccessMgr._create_storage`` passes only the storage
contract's arguments; VER's storage also needs ``variable_experience`` (from
upstream's ``habitat_baselines.rl.ver``), so this subclass overrides that one
hook (the importance-weight cap keeps VER's 1.0: no config key sets it).
With ``overlap_rollouts_and_learn`` it also keeps a second storage that the
next rollout fills while PPO learns on the first
(:meth:`VERAgentAccessMgr.begin_next_rollout`).
"""

from typing import Any, Optional

from habitat_baselines.common.baseline_registry import baseline_registry
from habitat_baselines.rl.ppo.single_agent_access_mgr import (
    SingleAgentAccessMgr,
    get_rollout_obs_space,
)


class VERAgentAccessMgr(SingleAgentAccessMgr):
    """``SingleAgentAccessMgr`` whose storage gets VER's options."""

    def _create_storage(
        self,
        num_envs: int,
        env_spec: Any,
        actor_critic: Any,
        policy_action_space: Any,
        config: Any,
        device: Any,
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

    _spare: Optional[Any] = None

    def begin_next_rollout(self) -> Any:
        """The storage the next rollout fills, starting from the current
        storage's actions in flight; the current one stays intact for
        learning until :meth:`swap_rollouts`."""
        if self._spare is None:
            self._spare = self._create_storage(
                num_envs=self._num_envs,
                env_spec=self._env_spec,
                actor_critic=self._actor_critic,
                policy_action_space=self._actor_critic.policy_action_space,
                config=self._config,
                device=self._device,
            )
        self._spare.continue_from(self._rollouts)
        return self._spare

    @property
    def previous_rollouts(self) -> Optional[Any]:
        """Between :meth:`swap_rollouts` and the next
        :meth:`begin_next_rollout`: the storage learnt last, data intact."""
        return self._spare

    def swap_rollouts(self) -> None:
        """After learning: the storage begun by :meth:`begin_next_rollout`
        becomes :attr:`rollouts`; the learnt one is kept as the next spare."""
        if self._spare is None:
            raise RuntimeError("swap_rollouts: begin_next_rollout was not called")
        self._rollouts, self._spare = self._spare, self._rollouts
