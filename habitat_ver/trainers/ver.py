"""The ``ver`` trainer: Variable Experience Rollout (VER paper, section 2).

Environments step in their own processes as soon as their action arrives
(the ``per_env`` env pool,
:class:`~habitat_ver.system.per_env_pool.PerEnvPool`); inference runs in the
trainer's process on every env whose result has arrived, all at once (dynamic
batching up to ``max_batch``); each step lands in
:class:`~habitat_ver.storage.ver_storage.VERStorage`.  A rollout ends after
``T * N`` steps from whichever envs delivered them; the actions computed last
stay in flight and their steps count in the next rollout.  With
``habitat_baselines.rl.ver.variable_experience=False`` (NoVER) every env
contributes exactly ``T`` steps.  With
``habitat_baselines.rl.ver.overlap_rollouts_and_learn=True`` the envs keep
stepping while PPO learns: a thread acts with a frozen copy of the policy and
fills a second storage, which becomes the next rollout.

Collection is :class:`~habitat_ver.system.ver_collector.VERCollector`'s; this
class wires it to the storage and the policy, cuts rollouts of slow ranks
(multi-rank preemption) and learns.  Everything else -- set-up, checkpoints,
resume, logging, evaluation (upstream's vector env and evaluator) -- is the
shared base's, :class:`~habitat_ver.trainers.base.HabitatVerTrainer`, through
its named hooks (``_create_agent``, ``collect_rollout``, ``_update_agent``)
and its env pool by name (``ENV_POOL``): ``ver`` is a sibling of
:class:`~habitat_ver.trainers.ddppo.DDPPOTrainer` and ``appo``, not a child
of either.
"""

import functools
import time
from typing import Any, Dict, List, Optional, Sequence

from habitat import logger
from habitat_baselines.common.obs_transformers import apply_obs_transforms_batch
from torch import Tensor

from habitat_ver.common.capabilities import CUT_ROLLOUT, ROLLOUT_STEPS, VARIABLE_EXPERIENCE
from habitat_ver.common.checks import AUTO
from habitat_ver.config.honoured_keys import refuse_appo_settings, refuse_double_buffering
from habitat_ver.config.upstream import use_ver_storage
from habitat_ver.config.errors import check
from habitat_ver.distributed.preemption_rule import RolloutEnd, RolloutProgress
from habitat_ver.system.reward_guard import NonFiniteRewards, max_nonfinite_rewards
from habitat_ver.system.shared_buffers import record_episode_stats
from habitat_ver.system.env_pool import AsyncEnvPool
from habitat_ver.system.ver_collector import VERCollector
from habitat_ver.trainers.base import HabitatVerTrainer
from habitat_ver.storage.ver_storage import VERStorage
from habitat_ver.trainers.ver_agent import VERAgentAccessMgr
from habitat_ver.trainers.ver_settings import auto_overlaps, inference_batching


def check_minibatches_divide_the_rollout(config: Any) -> None:
    """``num_mini_batch`` divides a rollout's ``num_steps x num_environments``
    steps: VER's minibatches hold exactly steps / num_mini_batch."""
    baselines = config.habitat_baselines
    batches = baselines.rl.ppo.num_mini_batch
    steps = baselines.rl.ppo.num_steps * baselines.num_environments
    check(
        steps % batches == 0,
        "habitat_baselines.rl.ppo.num_mini_batch",
        batches,
        f"a divisor of the {steps} steps of a ver rollout (num_steps x "
        "num_environments): VER minibatches hold exactly steps / num_mini_batch",
    )


class VERTrainer(HabitatVerTrainer):
    """VER / NoVER, registered as ``ver``."""

    # What validation checks this trainer (and a subclass) as.
    TRAINER_KIND = "ver"
    PROVIDES = frozenset({ROLLOUT_STEPS, CUT_ROLLOUT, VARIABLE_EXPERIENCE})
    DEFAULT_PREEMPTION = "ver"

    ENV_POOL = "per_env"
    ENV_POOL_NEEDS = AsyncEnvPool

    @classmethod
    def check_config(cls, config: Any) -> None:
        """ver's own settings: minibatches that divide the rollout; no
        lock-step double buffering, no ``rl.appo``."""
        check_minibatches_divide_the_rollout(config)
        refuse_double_buffering(
            config,
            cls.TRAINER_KIND,
            "ver's env workers step as soon as their own action arrives (no lock-step buffers)",
        )
        refuse_appo_settings(config, cls.TRAINER_KIND)

    def __init__(self, config: Any = None):
        super().__init__(config)
        # Training's collector (set up by _init_train).
        self._collector: Optional[VERCollector] = None
        # Whether each update of this process overlapped collection (for
        # overlap_rollouts_and_learn=auto, logged as system/overlap).
        self.overlapped: List[bool] = []
        # Steps each env contributed, per rollout (what VER varies).
        self.env_steps_per_rollout: List[List[int]] = []
        self._last_learn_time = 0.0
        # Per rollout: fresh and stale steps, collection seconds (overlapped
        # collection included), end time (epoch s), the previous learning
        # time and VER's target S.
        self.rollout_stats: List[Dict[str, Any]] = []

    # --------------------------------------------------------------- set-up
    @classmethod
    def adapt_config(cls, config: Any) -> Any:
        """Also reads upstream's storage names as ``VERStorage``."""
        return use_ver_storage(super().adapt_config(config), VERStorage)

    def _create_agent(self, resume_state: Any, **kwargs: Any) -> Any:
        if not isinstance(self.envs, AsyncEnvPool):
            return super()._create_agent(resume_state, **kwargs)  # evaluation
        return self._agent_with_own_storage(VERAgentAccessMgr, resume_state, **kwargs)

    # ------------------------------------------------------------ collection
    def _record_episodes(
        self,
        ids: Tensor,
        rewards: Tensor,
        dones: Tensor,
        infos: Tensor,
        info_names: Sequence[Sequence[str]],
    ) -> None:
        """Upstream's episode statistics: return, count and the info metrics
        of each episode's last step."""
        record_episode_stats(
            self.running_episode_stats,
            self.current_episode_reward,
            ids,
            rewards,
            dones,
            infos,
            info_names,
        )

    @property
    def collector(self) -> Optional[VERCollector]:
        """The rollout collector (batched inference over ready envs), built by
        ``_init_train``; None before."""
        return self._collector

    def _make_collector(self, pool: AsyncEnvPool) -> VERCollector:
        batching = inference_batching(self.config)
        for note in batching.deprecation_notes():
            logger.warning(note)
        return VERCollector(
            pool,
            min_batch_fraction=batching.min_batch_fraction,
            max_wait_ms=batching.max_wait_ms,
            device=self.device,
            transform=functools.partial(
                apply_obs_transforms_batch, obs_transforms=self.obs_transforms
            ),
            nonfinite_rewards=NonFiniteRewards(max_nonfinite_rewards(self.config)),
            record_episodes=self._record_episodes,
        )

    def collect_rollout(self) -> int:
        """Collect until the rollout holds its T*N (NoVER: T per env) steps,
        or until a multi-rank run preempts this rank (then the rest of the
        batch is the previous rollout's latest steps)."""
        assert self._collector is not None, "_init_train builds the collector"
        self._agent.eval()
        rollouts = self._agent.rollouts
        self._preemption.start_rollout(self.num_updates_done)
        steps, seconds = self._collector.collect(
            rollouts, self._agent.actor_critic, self._preempted
        )
        self._after_collection(seconds, steps)
        self.env_steps_per_rollout.append(rollouts.env_steps.tolist())
        self.rollout_lengths.append(steps)
        return steps

    # ----------------------------------------------------------- preemption
    def _extra_resume_stats(self) -> Dict[str, Any]:
        saved: Dict[str, Any] = dict(last_learn_time=self._last_learn_time, target=None)
        saved.update(self._preemption.state())
        return dict(ver_preemption=saved)

    def _restore_extra_stats(self, stats: Dict[str, Any]) -> None:
        saved = stats.get("ver_preemption") or {}
        self._last_learn_time = float(saved.get("last_learn_time", 0.0))
        self._preemption.restore(saved)

    @property
    def _keeps_previous_rollout(self) -> bool:
        """Preemption fills short rollouts from the previous one, so it is kept."""
        return self._preemption.cuts_rollouts

    def _preempted(self, new_steps: int) -> bool:
        """True when this rank should stop collecting now (multi-rank only).

        The first rollout is never cut: there is no previous one to fill from.
        """
        if self._agent.previous_rollouts is None:
            return False
        rollouts = self._agent.rollouts
        progress = RolloutProgress(
            new_steps=new_steps,
            collected=rollouts.steps_collected,
            capacity=rollouts.num_steps * rollouts.num_envs,
        )
        return self._preemption.should_stop(self.num_updates_done, progress)

    def _after_collection(self, seconds: float, steps: int) -> None:
        """Share this rollout's statistics; fill a preempted rollout."""
        rollouts, update = self._agent.rollouts, self.num_updates_done
        step_time = seconds * rollouts.num_envs / max(steps, 1)
        self._preemption.end_rollout(update, RolloutEnd(steps, step_time, self._last_learn_time))
        stale = 0
        if not rollouts.rollout_done:
            stale = rollouts.fill_stale(self._agent.previous_rollouts)
        self.rollout_stats.append(
            dict(
                fresh=steps,
                stale=stale,
                collect_s=seconds,
                end_time=time.time(),
                learn_s_before=self._last_learn_time,
                target=self._preemption.state().get("target"),
            )
        )

    # -------------------------------------------------------------- learning
    def learn(self, steps: int) -> Dict[str, float]:
        assert self._collector is not None, "_init_train builds the collector"
        self.overlapped.append(self._overlaps_this_update())
        # The scheduler may first wait for the env steps in flight (their
        # results are held for the next rollout): the wait is collection.
        self._collect_seconds += self._scheduler.before_learn(
            self.num_updates_done,
            self.device,
            envs_idle=self._envs_idle_while_learning(),
            last_learn_s=self._last_learn_time,
            settle=self._collector.settle,
        )
        return super().learn(steps)

    def _envs_idle_while_learning(self) -> bool:
        # Without overlap, the envs wait for the next rollout (those with an
        # action in flight finish that step and are held).
        return not self.overlapped[-1]

    def _overlaps_this_update(self) -> bool:
        """``overlap_rollouts_and_learn``: True, False, or ``auto``'s choice
        from the latest wall times (the trainer's wait for this rollout and
        the last update's learning; none yet in a run's first update: off)
        and the cores the run left unused during that wait."""
        setting = self.config.habitat_baselines.rl.ver.overlap_rollouts_and_learn
        if setting != AUTO:
            return bool(setting)
        return auto_overlaps(
            self._last_learn_time,
            self._collect_seconds,
            self._collect_spare.last,
            self._scheduler.last_threads,
        )

    def _update_agent(self) -> Dict[str, float]:
        assert self._collector is not None, "_init_train builds the collector"
        ppo = self._ppo_cfg
        rollouts = self._agent.rollouts
        start = time.monotonic()
        rollouts.compute_returns(None, ppo.use_gae, ppo.gamma, ppo.tau)
        self._agent.train()
        if self.overlapped[-1]:
            # The envs keep stepping into the next rollout's storage; the
            # learnt one is left untouched until the swap.
            nxt = self._agent.begin_next_rollout()
            with self._collector.collecting_while(nxt, self._agent.actor_critic):
                losses = self._agent.updater.update(rollouts)
            self._agent.swap_rollouts()
        else:
            losses = self._agent.updater.update(rollouts)
            if self._keeps_previous_rollout:
                self._agent.begin_next_rollout()
                self._agent.swap_rollouts()
            else:
                rollouts.after_update()
        self._agent.rollouts.increment_policy_version()
        self._agent.after_update()
        losses["system/nonfinite_rewards"] = float(self._collector.nonfinite_rewards.count)
        losses["system/overlap"] = float(self.overlapped[-1])
        inference = self._collector.inference.take()
        losses["system/inference_batch"] = inference.steps / max(inference.calls, 1)
        losses["system/inference_seconds"] = inference.seconds
        self._last_learn_time = time.monotonic() - start
        return losses

    def _init_train(self, resume_state: Optional[Dict[str, Any]] = None) -> None:
        ver = self.config.habitat_baselines.rl.ver
        super()._init_train(resume_state)
        if isinstance(self.envs, AsyncEnvPool):
            self._collector = self._make_collector(self.envs)
        if ver.num_inference_workers > 1:
            logger.info(
                f"habitat_baselines.rl.ver.num_inference_workers={ver.num_inference_workers}: "
                "inference runs in the trainer process (dynamic batching over all envs)"
            )
