"""The ``appo`` trainer: Sample Factory's asynchronous PPO.

Petrenko et al. 2020, sections 3.1-3.4.  Three parts run at once:

* rollout workers (the ``grouped`` env pool,
  :mod:`habitat_ver.system.grouped_pool`), processes that only simulate, each
  stepping two groups of envs alternately;
* a policy worker (:mod:`habitat_ver.system.appo_policy_worker`), a thread of
  this process that batches inference over every group whose results
  arrived and writes trajectories of ``T = rl.ppo.num_steps`` steps into
  shared slots (:mod:`habitat_ver.system.appo_buffers`);
* the learner (this thread), which hands ``rl.appo.batch_trajectories``
  complete trajectories, as soon as they are ready, to the PPO updater every
  trainer uses (:class:`~habitat_ver.updaters.ppo.PPOUpdater`, with V-trace
  as its targets step: :class:`~habitat_ver.updaters.targets.VTraceTargets`),
  then publishes the new weights to the policy worker.

The trajectory slots are the agent's storage
(:class:`~habitat_ver.trainers.appo_agent.AppoAgentAccessMgr`).  Each step
records the policy version that chose it; the learner reports the lag (its
version minus the step's) as ``system/policy_lag/mean`` and
``system/policy_lag/max`` and drops trajectories older than
``rl.appo.max_policy_lag``.  Set-up, checkpoints, resume, logging and
evaluation are :class:`~habitat_ver.trainers.base.HabitatVerTrainer`'s (no
preemption of slow ranks: one rank), through its hooks (``_create_agent``,
``collect_rollout``, ``_update_agent``) and its env pool by name
(``ENV_POOL``).
"""

import copy
import functools
from typing import Any, Dict, List, Optional

from habitat import logger
from habitat_baselines.common.obs_transformers import apply_obs_transforms_batch

from habitat_ver.common.capabilities import OFF_POLICY_TRAJECTORIES
from habitat_ver.common.checks import AUTO, is_count
from habitat_ver.config.errors import check
from habitat_ver.config.honoured_keys import (
    refuse_double_buffering,
    refuse_overlap,
    require_gae_flag,
)
from habitat_ver.config.upstream import use_our_updater, with_appo_defaults
from habitat_ver.config.validate import several_ranks
from habitat_ver.envs.pools import resolve_layout
from habitat_ver.system.appo_batch import TrajectoryBatch
from habitat_ver.system.appo_buffers import SlotPool
from habitat_ver.system.appo_policy_worker import PolicyWorker
from habitat_ver.system.env_pool import AsyncGroupPool
from habitat_ver.system.reward_guard import max_nonfinite_rewards
from habitat_ver.trainers.appo_agent import AppoAgentAccessMgr
from habitat_ver.trainers.base import HabitatVerTrainer
from habitat_ver.updaters.ppo import PPOUpdater


def require_our_updater(config: Any, kind: str) -> None:
    """Trainer ``kind`` needs an updater with a targets step (our ``PPOUpdater``)."""
    from habitat_baselines.common.baseline_registry import baseline_registry

    name = config.habitat_baselines.updater_name
    updater = baseline_registry.get_updater(name)
    check(
        isinstance(updater, type) and issubclass(updater, PPOUpdater),
        "habitat_baselines.updater_name",
        name,
        f"PPOUpdater (or a subclass) for trainer {kind!r}: it sets the V-trace targets step",
    )


def validate_appo(config: Any) -> None:
    """``habitat_baselines.rl.appo`` as the appo trainer reads it (its
    ``check_config`` calls this; other trainers refuse the section)."""
    baselines = config.habitat_baselines
    appo = baselines.rl.get("appo")
    if appo is None:
        return
    key = "habitat_baselines.rl.appo."
    workers, groups = resolve_layout(
        baselines.num_environments, appo.num_rollout_workers, appo.num_env_groups
    )
    check(
        is_count(workers, 1) and baselines.num_environments % workers == 0,
        key + "num_rollout_workers",
        workers,
        f"'{AUTO}' or a positive divisor of habitat_baselines.num_environments="
        f"{baselines.num_environments}",
    )
    per_worker = baselines.num_environments // workers
    check(
        is_count(groups, 1) and per_worker % groups == 0,
        key + "num_env_groups",
        groups,
        f"'{AUTO}' or a positive divisor of the envs per rollout worker ({per_worker})",
    )
    check(
        appo.batch_trajectories >= 0,
        key + "batch_trajectories",
        appo.batch_trajectories,
        ">= 0 (0: habitat_baselines.num_environments)",
    )
    batch = appo.batch_trajectories or baselines.num_environments
    check(
        appo.num_trajectory_slots == 0
        or appo.num_trajectory_slots >= batch + baselines.num_environments,
        key + "num_trajectory_slots",
        appo.num_trajectory_slots,
        f"0 (automatic) or >= batch_trajectories + num_environments ({batch} + "
        f"{baselines.num_environments})",
    )
    check(
        baselines.rl.ppo.num_mini_batch <= batch,
        "habitat_baselines.rl.ppo.num_mini_batch",
        baselines.rl.ppo.num_mini_batch,
        f"at most the trajectories per batch ({batch}) for appo",
    )
    for name in ("vtrace_rho_clip", "vtrace_c_clip"):
        check(appo[name] > 0, key + name, appo[name], "must be > 0")
    check(appo.max_policy_lag >= 0, key + "max_policy_lag", appo.max_policy_lag, "must be >= 0")


class AppoTrainer(HabitatVerTrainer):
    """Asynchronous PPO with V-trace, registered as ``appo`` (single rank)."""

    # What validation checks this trainer (and a subclass) as.
    TRAINER_KIND = "appo"
    PROVIDES = frozenset({OFF_POLICY_TRAJECTORIES})

    ENV_POOL = "grouped"
    ENV_POOL_NEEDS = AsyncGroupPool

    def __init__(self, config: Any = None):
        super().__init__(config)
        self._policy_worker: Optional[PolicyWorker] = None
        self._batch_slots: List[int] = []
        self._dropped = 0
        # Per update: (mean, max) lag of the learnt steps, in policy versions.
        self.policy_lag: List[tuple] = []
        self.dropped_trajectories = 0

    @property
    def _appo(self) -> Any:
        return self.config.habitat_baselines.rl.appo

    @property
    def _rollout_workers(self) -> AsyncGroupPool:
        """Training's envs (evaluation steps a vector env instead)."""
        if not isinstance(self.envs, AsyncGroupPool):
            raise RuntimeError(f"appo trains on rollout workers, not {type(self.envs).__name__}")
        return self.envs

    # --------------------------------------------------------------- set-up
    @classmethod
    def check_config(cls, config: Any) -> None:
        """appo's own settings (:func:`habitat_ver.config.validate.validate_trainer`
        calls this): one rank, ``rl.appo``'s layout and batching, no
        lock-step double buffering, no overlap, V-trace's targets."""
        here = several_ranks(config)
        check(
            here is None,
            "habitat_baselines.trainer_name",
            config.habitat_baselines.trainer_name,
            f"the appo trainer runs on one rank, and {here}; start it as one process",
        )
        validate_appo(config)
        refuse_double_buffering(
            config,
            cls.TRAINER_KIND,
            "appo's rollout workers double-buffer by env groups (rl.appo.num_env_groups)",
        )
        refuse_overlap(config, cls.TRAINER_KIND)
        require_gae_flag(
            config,
            cls.TRAINER_KIND,
            "its targets are V-trace's (rl.appo.vtrace_rho_clip, rl.appo.vtrace_c_clip), "
            "there is no Monte-Carlo mode",
        )
        require_our_updater(config, cls.TRAINER_KIND)

    @classmethod
    def adapt_config(cls, config: Any) -> Any:
        """Also fills in ``rl.appo``'s defaults (upstream configs lack it) and
        reads upstream's ``PPO`` updater as ours."""
        return use_our_updater(with_appo_defaults(super().adapt_config(config)))

    def _create_agent(self, resume_state: Any, **kwargs: Any) -> Any:
        """Training: the trajectory slots as storage, V-trace targets."""
        if not isinstance(self.envs, AsyncGroupPool):
            return super()._create_agent(resume_state, **kwargs)  # evaluation
        return self._agent_with_own_storage(AppoAgentAccessMgr, resume_state, **kwargs)

    def _init_train(self, resume_state: Optional[Dict[str, Any]] = None) -> None:
        if self.config.habitat_baselines.rl.ddppo.force_distributed or self._is_distributed:
            raise NotImplementedError("the appo trainer runs on one rank")
        super()._init_train(resume_state)
        policy = self._agent.actor_critic
        self._trajectories = self._agent.rollouts
        self._slots = SlotPool(self._trajectories.num_slots)
        self._transform = functools.partial(
            apply_obs_transforms_batch, obs_transforms=self.obs_transforms
        )
        acting = copy.deepcopy(policy).eval().requires_grad_(False)
        self._policy_worker = PolicyWorker(
            self._rollout_workers,
            acting,
            self._trajectories,
            self._slots,
            self.device,
            self._transform,
            max_nonfinite_rewards=max_nonfinite_rewards(self.config),
        )
        self._rollout_workers.close_hooks.append(self._policy_worker.stop)
        self._batch_size = self._appo.batch_trajectories or self.envs.num_envs

    # ----------------------------------------------------------- collection
    def _start_sampling(self) -> None:
        """First collection (after a resume restored the weights): publish
        and let the policy worker act on the reset envs."""
        worker = self._policy_worker
        assert worker is not None, "_init_train builds the policy worker"
        worker.publish(self._agent.actor_critic.state_dict(), self.num_updates_done)
        # The episode counters go on from the restored ones: the reward window
        # holds cumulative sums, so counters from 0 would make it negative.
        worker.running_stats.update(
            {key: value.clone() for key, value in self.running_episode_stats.items()}
        )
        worker.start(self._rollout_workers.all_groups())

    def collect_rollout(self) -> int:
        """Wait for ``batch_trajectories`` complete trajectories no older than
        ``max_policy_lag``; returns the env steps they (and dropped ones) hold."""
        worker = self._policy_worker
        assert worker is not None, "_init_train builds the policy worker"
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
        worker = self._policy_worker
        assert worker is not None, "_init_train builds the policy worker"
        slots, self._batch_slots = self._batch_slots, []
        batch = self._trajectories.batch(slots)
        self._slots.give_back(slots)
        lag = (self.num_updates_done - batch["versions"]).float()
        self._agent.train()
        losses = self._agent.updater.update(TrajectoryBatch(batch, self.device, self._transform))
        self._agent.eval()
        worker.publish(self._agent.actor_critic.state_dict(), self.num_updates_done + 1)
        self._agent.after_update()
        mean_lag, max_lag = float(lag.mean()), float(lag.max())
        self.policy_lag.append((mean_lag, max_lag))
        losses.update(
            {
                "system/policy_lag/mean": mean_lag,
                "system/policy_lag/max": max_lag,
                "system/dropped_trajectories": float(self._dropped),
                "system/nonfinite_rewards": float(worker.nonfinite_rewards.count),
            }
        )
        if (self.num_updates_done + 1) % self.config.habitat_baselines.log_interval == 0:
            logger.info(
                f"appo update {self.num_updates_done + 1}: policy lag mean {mean_lag:.2f} "
                f"max {max_lag:.0f}, dropped trajectories {self.dropped_trajectories}"
            )
        return losses
