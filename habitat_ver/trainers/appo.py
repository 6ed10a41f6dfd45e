"""The ``appo`` trainer: Sample Factory's asynchronous PPO.

Petrenko et al. 2020, sections 3.1-3.4.  Three parts run at once:

* rollout workers (:mod:`habitat_ver.system.appo_rollout_worker`), processes
  that only simulate, each stepping two groups of envs alternately;
* a policy worker (:mod:`habitat_ver.system.appo_policy_worker`), a thread of
  this process that batches inference over every group whose results
  arrived and writes trajectories of ``T = rl.ppo.num_steps`` steps into
  shared slots (:mod:`habitat_ver.system.appo_buffers`);
* the learner (this thread, math in :mod:`habitat_ver.system.appo_learner`),
  which trains on ``rl.appo.batch_trajectories`` complete trajectories as
  soon as they are ready, with V-trace targets and PPO clipping, then
  publishes the new weights to the policy worker.

Each step records the policy version that chose it; the learner reports the
lag (its version minus the step's) as ``policy_lag/mean`` and
``policy_lag/max`` and drops trajectories older than ``rl.appo.max_policy_lag``.
Set-up, checkpoints, resume, logging and evaluation are
:class:`~habitat_ver.trainers.base.HabitatVerTrainer`'s (no preemption of
slow ranks: one rank), through its hooks (``_init_envs``,
``_create_agent``, ``_collect_rollout``, ``_update_agent``).
"""

import copy
import functools
from typing import Any, Dict, List, Optional

from habitat import logger
from habitat_baselines.common.obs_transformers import apply_obs_transforms_batch

from habitat_ver.config.schema import hang_warning_seconds
from habitat_ver.config.upstream import with_appo_defaults
from habitat_ver.envs.builder import scenario_for
from habitat_ver.envs.factory import env_builders
from habitat_ver.system.appo_buffers import SlotPool, TrajectoryBuffers
from habitat_ver.system.appo_learner import AppoLearner, AppoLearnerSettings
from habitat_ver.system.appo_policy_worker import PolicyWorker
from habitat_ver.system.appo_rollout_worker import RolloutWorkerPool
from habitat_ver.system.reward_guard import max_nonfinite_rewards
from habitat_ver.trainers.base import HabitatVerTrainer


class AppoTrainer(HabitatVerTrainer):
    """Asynchronous PPO with V-trace, registered as ``appo`` (single rank)."""

    def __init__(self, config: Any = None):
        super().__init__(config)
        self._policy_worker: Optional[PolicyWorker] = None
        self._learner: Optional[AppoLearner] = None
        self._batch_slots: List[int] = []
        self._dropped = 0
        # Per update: (mean, max) lag of the learnt steps, in policy versions.
        self.policy_lag: List[tuple] = []
        self.dropped_trajectories = 0

    @property
    def _appo(self) -> Any:
        return self.config.habitat_baselines.rl.appo

    @property
    def _rollout_workers(self) -> RolloutWorkerPool:
        """Training's envs (evaluation steps a vector env instead)."""
        if not isinstance(self.envs, RolloutWorkerPool):
            raise RuntimeError(f"appo trains on rollout workers, not {type(self.envs).__name__}")
        return self.envs

    # --------------------------------------------------------------- set-up
    @classmethod
    def adapt_config(cls, config: Any) -> Any:
        """Also fills in ``rl.appo``'s defaults (upstream configs lack it)."""
        return with_appo_defaults(super().adapt_config(config))

    def _init_envs(self, config: Any = None, is_eval: bool = False) -> None:
        if is_eval:  # evaluation runs upstream's evaluator on a vector env
            return super()._init_envs(config, is_eval)
        config = self.config if config is None else config
        appo = config.habitat_baselines.rl.appo
        self._use_env_workers(
            RolloutWorkerPool(
                env_builders(config),
                appo.num_rollout_workers,
                appo.num_env_groups,
                describe=lambda i: f"env index {i}, scenario {scenario_for(config, i)}",
                serial=appo.serial,
                hang_warning_s=hang_warning_seconds(config),
            )
        )

    def _init_train(self, resume_state: Optional[Dict[str, Any]] = None) -> None:
        if self.config.habitat_baselines.rl.ddppo.force_distributed or self._is_distributed:
            raise NotImplementedError("the appo trainer runs on one rank")
        super()._init_train(resume_state)
        appo, ppo = self._appo, self._ppo_cfg
        n = self.envs.num_envs
        batch = appo.batch_trajectories or n
        policy = self._agent.actor_critic
        slots = appo.num_trajectory_slots or 2 * batch + n
        self._trajectories = TrajectoryBuffers.allocate(
            slots,
            ppo.num_steps,
            self._rollout_workers.observation_space,
            self._rollout_workers.action_space,
            (policy.num_recurrent_layers, policy.recurrent_hidden_size),
        )
        self._slots = SlotPool(slots)
        transform = functools.partial(
            apply_obs_transforms_batch, obs_transforms=self.obs_transforms
        )
        acting = copy.deepcopy(policy).eval().requires_grad_(False)
        self._policy_worker = PolicyWorker(
            self._rollout_workers,
            acting,
            self._trajectories,
            self._slots,
            self.device,
            transform,
            max_nonfinite_rewards=max_nonfinite_rewards(self.config),
        )
        self._rollout_workers.close_hooks.append(self._policy_worker.stop)
        self._learner = AppoLearner(
            policy,
            self._agent.updater.optimizer,
            AppoLearnerSettings(
                clip_eps=ppo.clip_param,
                ppo_epoch=ppo.ppo_epoch,
                num_mini_batch=ppo.num_mini_batch,
                value_loss_coef=ppo.value_loss_coef,
                entropy_coef=float(ppo.entropy_coef),
                max_grad_norm=ppo.max_grad_norm,
                gamma=ppo.gamma,
                vtrace_rho_clip=appo.vtrace_rho_clip,
                vtrace_c_clip=appo.vtrace_c_clip,
                normalize_advantage=ppo.use_normalized_advantage,
            ),
            self.device,
            transform,
        )
        self._batch_size = batch

    # ----------------------------------------------------------- collection
    def _start_sampling(self) -> None:
        """First collection (after a resume restored the weights): publish
        and let the policy worker act on the reset envs."""
        worker = self._policy_worker
        worker.publish(self._agent.actor_critic.state_dict(), self.num_updates_done)
        worker.start(self._rollout_workers.all_groups())

    def _collect_rollout(self) -> int:
        """Wait for ``batch_trajectories`` complete trajectories no older than
        ``max_policy_lag``; returns the env steps they (and dropped ones) hold."""
        worker = self._policy_worker
        if worker.version < 0:
            self._start_sampling()
        T, version = self._trajectories.num_steps, self.num_updates_done
        kept: List[int] = []
        dropped = 0
        while len(kept) < self._batch_size:
            slot = worker.take_full()
            oldest = int(self._trajectories.versions[slot].min())
            if version - oldest > self._appo.max_policy_lag:
                self._slots.give_back([slot])
                dropped += 1
            else:
                kept.append(slot)
        self._batch_slots, self._dropped = kept, dropped
        self.dropped_trajectories += dropped
        with worker.stats_lock:
            for key, value in worker.running_stats.items():
                self.running_episode_stats[key] = value.clone()
        return (len(kept) + dropped) * T

    # -------------------------------------------------------------- learning
    def _update_agent(self) -> Dict[str, float]:
        slots, self._batch_slots = self._batch_slots, []
        batch = self._trajectories.batch(slots)
        self._slots.give_back(slots)
        lag = (self.num_updates_done - batch["versions"]).float()
        losses = self._learner.learn(batch)
        self._policy_worker.publish(
            self._agent.actor_critic.state_dict(), self.num_updates_done + 1
        )
        self._agent.after_update()
        mean_lag, max_lag = float(lag.mean()), float(lag.max())
        self.policy_lag.append((mean_lag, max_lag))
        losses.update(
            {
                "policy_lag/mean": mean_lag,
                "policy_lag/max": max_lag,
                "diag/dropped_trajectories": float(self._dropped),
                "system/nonfinite_rewards": float(self._policy_worker.nonfinite_rewards.count),
            }
        )
        if (self.num_updates_done + 1) % self.config.habitat_baselines.log_interval == 0:
            logger.info(
                f"appo update {self.num_updates_done + 1}: policy lag mean {mean_lag:.2f} "
                f"max {max_lag:.0f}, dropped trajectories {self.dropped_trajectories}"
            )
        return losses
