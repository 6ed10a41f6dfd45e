"""The ``ver`` trainer: Variable Experience Rollout (VER paper, section 2).

Environments step in their own processes as soon as their action arrives
(:class:`~habitat_ver.system.worker_pool.EnvWorkerPool`); inference runs in the
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

Everything else -- set-up, learning, checkpoints, resume, logging, evaluation
(upstream's vector env and evaluator) -- is :class:`DDPPOTrainer`'s, through
its named hooks (``_init_envs``, ``_create_agent``, ``_collect_rollout``,
``_update_agent``).
"""

import contextlib
import copy
import queue
import threading
import time
from typing import Any, Dict, Iterator, List, Optional

import torch
from habitat import logger
from habitat_baselines.common.obs_transformers import apply_obs_transforms_batch
from habitat_baselines.rl.ddppo.ddp_utils import rank0_only
from habitat_baselines.utils.common import inference_mode
from torch import Tensor

from habitat_ver.config.schema import VERSystemConfig, hang_warning_seconds, section_or_default
from habitat_ver.config.upstream import use_ver_storage
from habitat_ver.distributed.ver_tracker import VERPreemptionTracker
from habitat_ver.envs.builder import scenario_for
from habitat_ver.envs.factory import env_builders
from habitat_ver.system.reward_guard import NonFiniteRewards, max_nonfinite_rewards
from habitat_ver.system.shared_buffers import record_episode_stats
from habitat_ver.system.truncation import truncated_from_info_rows
from habitat_ver.system.worker_pool import EnvWorkerPool
from habitat_ver.trainers.ddppo import DDPPOTrainer
from habitat_ver.trainers.ver_agent import VERAgentAccessMgr


class VERTrainer(DDPPOTrainer):
    """VER / NoVER, registered as ``ver``."""

    DEFAULT_PREEMPTION = "ver"
    SUPPORTED_PREEMPTION = ("none", "ddppo", "ver")

    # Run the env workers in this process (tests); set by tests only.
    serial_envs: bool = False
    # Wall clock of collection times (seconds); tests substitute their own.
    clock = staticmethod(time.monotonic)

    def __init__(self, config: Any = None):
        super().__init__(config)
        # Envs whose result arrived but did not fit in the rollout: they get
        # their action at the start of the next one.
        self._held: List[int] = []
        self._fresh = True  # every env waits for its first action
        # Steps each env contributed, per rollout (what VER varies).
        self.env_steps_per_rollout: List[List[int]] = []
        # overlap_rollouts_and_learn: the policy copy the collector acts with.
        self._inference_policy: Optional[Any] = None
        # Multi-rank with distrib_preemption.policy=ver (else None).
        self._ver_tracker: Optional[VERPreemptionTracker] = None
        self._last_learn_time = 0.0
        # Seconds the overlapped collector spent filling the current rollout.
        self._overlap_collect_s = 0.0
        # Per rollout: fresh and stale steps, collection seconds (overlapped
        # collection included), end time (epoch s), the previous learning
        # time and VER's target S.
        self.rollout_stats: List[Dict[str, Any]] = []

    # --------------------------------------------------------------- set-up
    @classmethod
    def adapt_config(cls, config: Any) -> Any:
        """Also reads upstream's storage names as ``VERStorage``."""
        return use_ver_storage(super().adapt_config(config))

    def _init_envs(self, config: Any = None, is_eval: bool = False) -> None:
        if is_eval:  # evaluation runs upstream's evaluator on a vector env
            return super()._init_envs(config, is_eval)
        config = self.config if config is None else config
        makers = env_builders(config)
        first = makers[0][0]
        self._use_env_workers(
            EnvWorkerPool(
                [make for _, make in makers],
                describe=lambda i: f"global index {first + i}, {scenario_for(config, first + i)}",
                serial=self.serial_envs,
                hang_warning_s=hang_warning_seconds(config),
            )
        )

    def _create_agent(self, resume_state: Any, **kwargs: Any) -> Any:
        if self.envs.__class__ is not EnvWorkerPool:
            return super()._create_agent(resume_state, **kwargs)  # evaluation
        self._create_obs_transforms()
        return VERAgentAccessMgr(
            config=self.config,
            env_spec=self._env_spec,
            is_distrib=self._is_distributed,
            device=self.device,
            resume_state=resume_state,
            num_envs=self.envs.num_envs,
            percent_done_fn=self.percent_done,
            **kwargs,
        )

    def _init_state(self) -> None:
        n = self.envs.num_envs
        policy = self._agent.actor_critic
        self._hidden = torch.zeros(
            n, policy.num_recurrent_layers, policy.recurrent_hidden_size, device=self.device
        )
        actions = self._agent.rollouts.buffers["actions"]
        self._prev_actions = torch.zeros(
            n, *actions.shape[1:], dtype=actions.dtype, device=self.device
        )

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

    def _admit(self, ids: List[int], rollouts: Any = None) -> List[int]:
        """The ready envs whose step fits in this rollout; the rest are held."""
        rollouts = self._agent.rollouts if rollouts is None else rollouts
        if rollouts.variable_experience:
            room = rollouts.num_steps * rollouts.num_envs - rollouts.steps_collected
            fits, held = ids[:room], ids[room:]
        else:
            counts = rollouts.env_steps
            fits = [i for i in ids if counts[i] < rollouts.num_steps]
            held = [i for i in ids if counts[i] >= rollouts.num_steps]
        self._held.extend(held)
        return fits

    def _record_episodes(self, ids: Tensor, rewards: Tensor, dones: Tensor, infos: Tensor) -> None:
        """Upstream's episode statistics: return, count and the info metrics
        of each episode's last step."""
        record_episode_stats(
            self.running_episode_stats,
            self.current_episode_reward,
            ids,
            rewards,
            dones,
            infos,
            self.envs.info_names,
        )

    def _act(
        self, ids: Tensor, first: bool = False, rollouts: Any = None, policy: Any = None
    ) -> None:
        """Inference for ``ids`` on their latest results, then send actions.

        ``rollouts`` and ``policy`` default to the agent's; the collection
        that overlaps learning passes the next storage and a frozen copy.
        """
        rollouts = self._agent.rollouts if rollouts is None else rollouts
        policy = self._agent.actor_critic if policy is None else policy
        observations, rewards, dones, infos = self.envs.read(ids)
        truncated = None
        if first:  # no step completes: rewards unused
            rewards = torch.zeros_like(rewards)
        else:
            truncated = truncated_from_info_rows(ids, infos, self.envs.info_names, dones)
            rewards = self._nonfinite_rewards.clean(ids, rewards)
            self._record_episodes(ids, rewards, dones, infos)
        masks = torch.logical_not(dones).view(-1, 1)
        if first:
            masks[:] = False
        batch = {k: v.to(self.device) for k, v in observations.items()}
        batch = apply_obs_transforms_batch(batch, self.obs_transforms)
        hidden, prev_actions = self._hidden[ids], self._prev_actions[ids]
        with inference_mode():
            out = policy.act(batch, hidden, prev_actions, masks.to(self.device))
        rollouts.insert(
            ids,
            observations=batch,
            recurrent_hidden_states=hidden,
            prev_actions=prev_actions,
            masks=masks,
            actions=out.actions,
            action_log_probs=out.action_log_probs,
            value_preds=out.values,
            rewards=rewards.view(-1, 1),
            truncated=truncated,
        )
        self._hidden[ids] = out.rnn_hidden_states
        self._prev_actions[ids] = out.actions
        self.envs.send_actions(ids, out.env_actions.cpu())

    def _start_rollout(self) -> None:
        if self._fresh:
            self._init_state()
            self._act(torch.arange(self.envs.num_envs), first=True)
            self._fresh = False
        # Nothing fits when overlapped collection already filled this rollout
        # while PPO learnt: the held envs wait for the next one.
        self._act_on_held()

    def _act_on_held(self, rollouts: Any = None, policy: Any = None) -> None:
        """Acts on the held envs that fit in ``rollouts``; the rest stay held.

        Held envs have no action in flight, so no result of theirs will
        arrive: whoever collects next must act on them first, or they idle.
        """
        held, self._held = self._held, []
        admitted = self._admit(held, rollouts)
        if admitted:
            self._act(torch.tensor(admitted, dtype=torch.long), rollouts=rollouts, policy=policy)

    def _collect_rollout(self) -> int:
        """Collect until the rollout holds its T*N (NoVER: T per env) steps,
        or until a multi-rank run preempts this rank (then the rest of the
        batch is the previous rollout's latest steps)."""
        self._agent.eval()
        rollouts = self._agent.rollouts
        start = self.clock()
        self._start_rollout()
        # Steps added to the preemption count so far: the first add also
        # brings those collected during learning, which count towards S.
        counted = 0
        while not rollouts.rollout_done:
            ids = self._admit(self._wait_ready())
            if ids:
                self._act(torch.tensor(ids, dtype=torch.long))
                new, counted = rollouts.steps_collected - counted, rollouts.steps_collected
                if self._preempted(new):
                    break
        steps = rollouts.steps_collected
        # Steps collected while PPO learnt took that time too: without it the
        # step time (VER's Time(S) estimate) is optimistic.
        seconds = self.clock() - start + self._overlap_collect_s
        self._overlap_collect_s = 0.0
        self._after_collection(seconds, steps)
        self.env_steps_per_rollout.append(rollouts.env_steps.tolist())
        self.rollout_lengths.append(steps)
        return steps

    # ----------------------------------------------------------- preemption
    def _init_preemption(self) -> None:
        super()._init_preemption()  # "ddppo": upstream's sync_frac rule
        if self._is_distributed and self.preemption_policy() == "ver":
            self._ver_tracker = VERPreemptionTracker(
                self.num_rollouts_done_store,
                torch.distributed.get_rank(),
                torch.distributed.get_world_size(),
                self.envs.num_envs,
                self._ppo_cfg.num_steps,
            )

    def _extra_resume_stats(self) -> Dict[str, Any]:
        tracker = self._ver_tracker
        return dict(
            ver_preemption=dict(
                last_learn_time=self._last_learn_time,
                target=None if tracker is None else tracker.target,
            )
        )

    def _restore_extra_stats(self, stats: Dict[str, Any]) -> None:
        saved = stats.get("ver_preemption") or {}
        self._last_learn_time = float(saved.get("last_learn_time", 0.0))
        # The first rollout after a restart has no previous rollout to fill
        # from, so it is not cut; the target comes back for the one after.
        if self._ver_tracker is not None and saved.get("target") is not None:
            self._ver_tracker.target = int(saved["target"])

    @property
    def _keeps_previous_rollout(self) -> bool:
        """Preemption fills short rollouts from the previous one, so it is kept."""
        return self._rollout_tracker is not None or self._ver_tracker is not None

    def _preempted(self, new_steps: int) -> bool:
        """True when this rank should stop collecting now (multi-rank only).

        The first rollout is never cut: there is no previous one to fill from.
        """
        if self._agent.previous_rollouts is None:
            return False
        rollouts = self._agent.rollouts
        if self._ver_tracker is not None:
            return self._ver_tracker.should_preempt(self.num_updates_done, new_steps)
        if self._rollout_tracker is not None:
            return self._rollout_tracker.should_preempt(
                self.num_updates_done,
                rollouts.steps_collected,
                rollouts.num_steps * rollouts.num_envs,
            )
        return False

    def _after_collection(self, seconds: float, steps: int) -> None:
        """Share this rollout's statistics; fill a preempted rollout."""
        rollouts, update = self._agent.rollouts, self.num_updates_done
        if self._rollout_tracker is not None:
            self._rollout_tracker.mark_done(update)
        if self._ver_tracker is not None:
            step_time = seconds * rollouts.num_envs / max(steps, 1)
            self._ver_tracker.publish(update, step_time, self._last_learn_time)
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
                target=None if self._ver_tracker is None else self._ver_tracker.target,
            )
        )

    # -------------------------------------------------------------- learning
    def _update_agent(self) -> Dict[str, float]:
        ppo = self._ppo_cfg
        rollouts = self._agent.rollouts
        start = time.monotonic()
        rollouts.compute_returns(None, ppo.use_gae, ppo.gamma, ppo.tau)
        self._agent.train()
        if self.config.habitat_baselines.rl.ver.overlap_rollouts_and_learn:
            with self._collecting_while_learning():
                losses = self._agent.updater.update(rollouts)
        else:
            losses = self._agent.updater.update(rollouts)
            if self._keeps_previous_rollout:
                self._agent.begin_next_rollout()
                self._agent.swap_rollouts()
            else:
                rollouts.after_update()
        self._agent.rollouts.increment_policy_version()
        self._agent.after_update()
        losses["system/nonfinite_rewards"] = float(self._nonfinite_rewards.count)
        self._last_learn_time = time.monotonic() - start
        if self._ver_tracker is not None:
            last = self.rollout_stats[-1]
            # Averaged over ranks by the per-update all-reduce: the run's share.
            losses["system/stale_fraction"] = last["stale"] / (last["fresh"] + last["stale"])
            losses["system/ver_preemption_steps"] = float(
                self._ver_tracker.plan_next(self.num_updates_done)
            )
            if rank0_only() and self.num_updates_done >= 2:
                self._ver_tracker.forget(self.num_updates_done - 2)
        return losses

    # ------------------------------------------------ overlapped collection
    @contextlib.contextmanager
    def _collecting_while_learning(self) -> Iterator[None]:
        """Envs keep stepping while PPO learns (``overlap_rollouts_and_learn``).

        A thread acts with a frozen copy of the pre-update policy and fills
        the next rollout's storage; the learnt storage is left untouched.
        Its steps carry the old policy version, so PPO's ratio (and the
        logged ``system/policy_lag``) treat them as one update stale.
        """
        nxt = self._agent.begin_next_rollout()
        policy = self._frozen_policy()
        stop, failure = threading.Event(), []
        thread = threading.Thread(
            target=self._collect_until,
            args=(nxt, policy, stop, failure),
            name="habitat_ver-overlap-collector",
            daemon=True,
        )
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
        if failure:
            raise failure[0]
        self._agent.swap_rollouts()

    def _frozen_policy(self) -> Any:
        """A copy of the policy with the current weights, for the collector."""
        policy = self._agent.actor_critic
        if self._inference_policy is None:
            self._inference_policy = copy.deepcopy(policy).eval().requires_grad_(False)
        self._inference_policy.load_state_dict(policy.state_dict())
        return self._inference_policy

    def _collect_until(
        self, rollouts: Any, policy: Any, stop: threading.Event, failure: List[BaseException]
    ) -> None:
        """The overlap thread: collect into ``rollouts`` until ``stop`` or full."""
        system = section_or_default(self.config, "ver_system", VERSystemConfig)
        n = self.envs.num_envs
        start = self.clock()
        try:
            # First: when learning outlasts this whole collection, held envs
            # would otherwise get no action until the rollout after.
            self._act_on_held(rollouts, policy)
            while not stop.is_set() and not rollouts.rollout_done:
                try:
                    ready = self.envs.wait_ready(
                        max_batch=n,
                        min_batch=max(1, int(system.min_batch_fraction * n)),
                        max_wait_s=system.max_wait_ms / 1000.0,
                        timeout=0.05,
                    )
                except queue.Empty:
                    continue
                ids = self._admit(ready, rollouts)
                if ids:
                    self._act(torch.tensor(ids, dtype=torch.long), rollouts=rollouts, policy=policy)
        except BaseException as error:  # noqa: BLE001 - re-raised by the trainer
            failure.append(error)
        finally:
            self._overlap_collect_s = self.clock() - start

    def _init_train(self, resume_state: Optional[Dict[str, Any]] = None) -> None:
        ver = self.config.habitat_baselines.rl.ver
        self._nonfinite_rewards = NonFiniteRewards(max_nonfinite_rewards(self.config))
        super()._init_train(resume_state)
        if ver.num_inference_workers > 1:
            logger.info(
                f"habitat_baselines.rl.ver.num_inference_workers={ver.num_inference_workers}: "
                "inference runs in the trainer process (dynamic batching over all envs)"
            )
