"""The ``ver`` trainer: Variable Experience Rollout (VER paper, section 2).

Environments step in their own processes as soon as their action arrives
(:class:`~habitat_ver.system.worker_pool.EnvWorkerPool`); inference runs in the
trainer's process on every env whose result has arrived, all at once (dynamic
batching up to ``max_batch``); each step lands in
:class:`~habitat_ver.storage.ver_storage.VERStorage`.  A rollout ends after
``T * N`` steps from whichever envs delivered them; the actions computed last
stay in flight and their steps count in the next rollout.  With
``habitat_baselines.rl.ver.variable_experience=False`` (NoVER) every env
contributes exactly ``T`` steps.

Everything else -- set-up, learning, checkpoints, resume, logging, evaluation
(upstream's vector env and evaluator) -- is :class:`DDPPOTrainer`'s, through
its named hooks (``_init_envs``, ``_create_agent``, ``_collect_rollout``,
``_update_agent``).
"""

import functools
from typing import Any, Dict, List, Optional

import torch
from habitat import logger
from habitat_baselines.common.env_spec import EnvironmentSpec
from habitat_baselines.common.obs_transformers import apply_obs_transforms_batch
from habitat_baselines.utils.common import inference_mode
from torch import Tensor

from habitat_ver.config.schema import VERSystemConfig, section_or_default
from habitat_ver.config.validate import ConfigError
from habitat_ver.envs.builder import build_env, scenario_for
from habitat_ver.envs.factory import VerVectorEnvFactory, rank
from habitat_ver.system.worker_pool import EnvWorkerPool
from habitat_ver.trainers.ddppo import DDPPOTrainer
from habitat_ver.trainers.ver_agent import VERAgentAccessMgr


class VERTrainer(DDPPOTrainer):
    """VER / NoVER, registered as ``ver``."""

    # Run the env workers in this process (tests); set by tests only.
    serial_envs: bool = False

    def __init__(self, config: Any = None):
        super().__init__(config)
        # Envs whose result arrived but did not fit in the rollout: they get
        # their action at the start of the next one.
        self._held: List[int] = []
        self._fresh = True  # every env waits for its first action
        # Steps each env contributed, per rollout (what VER varies).
        self.env_steps_per_rollout: List[List[int]] = []

    # --------------------------------------------------------------- set-up
    def _init_envs(self, config: Any = None, is_eval: bool = False) -> None:
        if is_eval:  # evaluation runs upstream's evaluator on a vector env
            return super()._init_envs(config, is_eval)
        config = self.config if config is None else config
        num_envs = config.habitat_baselines.num_environments
        first = rank() * num_envs
        make_envs = [
            functools.partial(
                build_env, VerVectorEnvFactory.env_config(config, i, [], rank() == 0), first + i
            )
            for i in range(num_envs)
        ]
        self.envs = EnvWorkerPool(
            make_envs,
            describe=lambda i: f"global index {first + i}, {scenario_for(config, first + i)}",
            serial=self.serial_envs,
        )
        self._env_spec = EnvironmentSpec(
            observation_space=self.envs.observation_space,
            action_space=self.envs.action_space,
            orig_action_space=self.envs.action_space,
        )
        self._rank0_keys = set()
        self._single_proc_infos = {}

    def _create_agent(self, resume_state: Any, **kwargs: Any) -> Any:
        if self.envs.__class__ is not EnvWorkerPool:
            return super()._create_agent(resume_state, **kwargs)  # evaluation
        self._create_obs_transforms()
        return VERAgentAccessMgr(
            config=self.config, env_spec=self._env_spec, is_distrib=self._is_distributed,
            device=self.device, resume_state=resume_state, num_envs=self.envs.num_envs,
            percent_done_fn=self.percent_done, **kwargs,
        )

    def _init_state(self) -> None:
        n = self.envs.num_envs
        policy = self._agent.actor_critic
        self._hidden = torch.zeros(
            n, policy.num_recurrent_layers, policy.recurrent_hidden_size, device=self.device
        )
        actions = self._agent.rollouts.buffers["actions"]
        self._prev_actions = torch.zeros(n, *actions.shape[1:], dtype=actions.dtype,
                                         device=self.device)

    # ------------------------------------------------------------ collection
    def _wait_ready(self) -> List[int]:
        """Ready envs, batched as ``habitat_baselines.ver_system`` asks."""
        system = section_or_default(self.config, "ver_system", VERSystemConfig)
        n = self.envs.num_envs
        return self.envs.wait_ready(
            max_batch=n,
            min_batch=max(1, int(system.min_batch_fraction * n)),
            max_wait_s=system.max_wait_ms / 1000.0,
        )

    def _admit(self, ids: List[int]) -> List[int]:
        """The ready envs whose step fits in this rollout; the rest are held."""
        rollouts = self._agent.rollouts
        if rollouts.variable_experience:
            room = rollouts.num_steps * rollouts.num_envs - rollouts.steps_collected
            fits, held = ids[:room], ids[room:]
        else:
            counts = rollouts.env_steps
            fits = [i for i in ids if counts[i] < rollouts.num_steps]
            held = [i for i in ids if counts[i] >= rollouts.num_steps]
        self._held.extend(held)
        return fits

    def _record_episodes(
        self, ids: Tensor, rewards: Tensor, dones: Tensor, infos: Tensor
    ) -> None:
        """Upstream's episode statistics: return, count and the info metrics
        of each episode's last step."""
        rewards, dones = rewards.view(-1, 1), dones.view(-1, 1).float()
        self.current_episode_reward[ids] += rewards
        stats = self.running_episode_stats
        stats["reward"][ids] += self.current_episode_reward[ids] * dones
        stats["count"][ids] += dones
        self.current_episode_reward[ids] *= 1.0 - dones
        for row, env in enumerate(ids.tolist()):
            if not dones[row]:
                continue
            for column, name in enumerate(self.envs.info_names[env]):
                value = float(infos[row, column])
                if value == value:  # NaN: the metric was absent this step
                    if name not in stats:
                        stats[name] = torch.zeros_like(stats["count"])
                    stats[name][env] += value

    def _act(self, ids: Tensor, first: bool = False) -> None:
        """Inference for ``ids`` on their latest results, then send actions."""
        observations, rewards, dones, infos = self.envs.read(ids)
        if not first:
            self._record_episodes(ids, rewards, dones, infos)
        masks = torch.logical_not(dones).view(-1, 1)
        if first:
            masks[:] = False
        batch = {k: v.to(self.device) for k, v in observations.items()}
        batch = apply_obs_transforms_batch(batch, self.obs_transforms)
        hidden, prev_actions = self._hidden[ids], self._prev_actions[ids]
        with inference_mode():
            out = self._agent.actor_critic.act(batch, hidden, prev_actions, masks.to(self.device))
        self._agent.rollouts.insert(
            ids, observations=batch, recurrent_hidden_states=hidden,
            prev_actions=prev_actions, masks=masks, actions=out.actions,
            action_log_probs=out.action_log_probs, value_preds=out.values,
            rewards=torch.nan_to_num(rewards, nan=0.0).view(-1, 1),
        )
        self._hidden[ids] = out.rnn_hidden_states
        self._prev_actions[ids] = out.actions
        self.envs.send_actions(ids, out.env_actions.cpu())

    def _start_rollout(self) -> None:
        if self._fresh:
            self._init_state()
            self._act(torch.arange(self.envs.num_envs), first=True)
            self._fresh = False
        held, self._held = self._held, []
        if held:
            self._act(torch.tensor(self._admit(held), dtype=torch.long))

    def _collect_rollout(self) -> int:
        """Collect until the rollout holds its T*N (NoVER: T per env) steps."""
        self._agent.eval()
        rollouts = self._agent.rollouts
        self._start_rollout()
        while not rollouts.rollout_done:
            ids = self._admit(self._wait_ready())
            if ids:
                self._act(torch.tensor(ids, dtype=torch.long))
        steps = rollouts.steps_collected
        self.env_steps_per_rollout.append(rollouts.env_steps.tolist())
        self.rollout_lengths.append(steps)
        return steps

    # -------------------------------------------------------------- learning
    def _update_agent(self) -> Dict[str, float]:
        ppo = self._ppo_cfg
        rollouts = self._agent.rollouts
        rollouts.compute_returns(None, ppo.use_gae, ppo.gamma, ppo.tau)
        self._agent.train()
        losses = self._agent.updater.update(rollouts)
        rollouts.after_update()
        rollouts.increment_policy_version()
        self._agent.after_update()
        return losses

    def _init_train(self, resume_state: Optional[Dict[str, Any]] = None) -> None:
        ver = self.config.habitat_baselines.rl.ver
        if ver.overlap_rollouts_and_learn:
            raise ConfigError(
                "habitat_baselines.rl.ver.overlap_rollouts_and_learn=True is not "
                "supported yet by habitat-ver's `ver` (envs with actions in flight "
                "keep stepping while it learns); set it to False"
            )
        super()._init_train(resume_state)
        if ver.num_inference_workers > 1:
            logger.info(
                f"habitat_baselines.rl.ver.num_inference_workers={ver.num_inference_workers}: "
                "inference runs in the trainer process (dynamic batching over all envs)"
            )
