"""The ``ddppo`` trainer: SyncOnRL with DD-PPO's straggler preemption.

All environments step in lock-step for T steps, then PPO learns on the
rollout; with several ranks (``torchrun``) gradients are averaged (upstream's
``DecentralizedDistributedMixin``) and ranks that straggle stop collecting early
(by default :mod:`habitat_ver.distributed.preemption`'s rule; any rule
registered for ``ddppo`` in :mod:`habitat_ver.distributed.preemption_rule`).

Stepping is upstream's (``_compute_actions_and_step_envs``,
``_collect_environment_result``) on a
:class:`~habitat_ver.system.lockstep_pool.LockstepPool`; resume, checkpoints,
stop signals and progress are :class:`~habitat_ver.trainers.base.HabitatVerTrainer`'s.
"""

import time
from typing import Any

from habitat_ver.common.capabilities import CUT_ROLLOUT, ROLLOUT_STEPS
from habitat_ver.config.honoured_keys import refuse_appo_settings, refuse_overlap
from habitat_ver.config.errors import check
from habitat_ver.distributed.preemption_rule import RolloutEnd, RolloutProgress
from habitat_ver.system.lockstep_pool import ObservedVectorEnv, StepRecord
from habitat_ver.trainers.base import HabitatVerTrainer


def check_minibatches_of_whole_envs(config: Any) -> None:
    """``num_mini_batch`` at most the envs: ddppo's lock-step storage puts
    whole envs' rollouts in each minibatch."""
    baselines = config.habitat_baselines
    batches = baselines.rl.ppo.num_mini_batch
    envs = baselines.num_environments
    check(
        batches <= envs,
        "habitat_baselines.rl.ppo.num_mini_batch",
        batches,
        f"at most habitat_baselines.num_environments={envs} for ddppo "
        "(each minibatch holds whole envs' rollouts)",
    )


class DDPPOTrainer(HabitatVerTrainer):
    """SyncOnRL + DD-PPO, registered as ``ddppo``."""

    # What validation checks this trainer (and a subclass) as.
    TRAINER_KIND = "ddppo"
    PROVIDES = frozenset({ROLLOUT_STEPS, CUT_ROLLOUT})
    DEFAULT_PREEMPTION = "ddppo"

    @classmethod
    def check_config(cls, config: Any) -> None:
        """ddppo's own settings (:func:`habitat_ver.config.validate.validate_trainer`
        calls this): minibatches of whole envs; it neither overlaps
        collection and learning (``rl.ver``) nor reads ``rl.appo``."""
        check_minibatches_of_whole_envs(config)
        refuse_overlap(config, cls.TRAINER_KIND)
        refuse_appo_settings(config, cls.TRAINER_KIND)

    def _envs_idle_while_learning(self) -> bool:
        return True  # lock-step: every env waits for the next rollout

    def should_end_early(self, rollout_step: int) -> bool:
        """Upstream's preemption hook, answered by the preemption rule."""
        progress = RolloutProgress(
            new_steps=self.envs.num_envs,
            collected=rollout_step,
            capacity=self._ppo_cfg.num_steps,
        )
        return self._preemption.should_stop(self.num_updates_done, progress)

    def collect_rollout(self) -> int:
        """Step every env T times (fewer if preempted); returns steps collected."""
        self._agent.eval()
        start = time.monotonic()
        self._preemption.start_rollout(self.num_updates_done)
        steps = 0
        nbuffers = self._agent.nbuffers
        for buffer_index in range(nbuffers):
            self._compute_actions_and_step_envs(buffer_index)
        for step in range(self._ppo_cfg.num_steps):
            last = self.should_end_early(step + 1) or step + 1 == self._ppo_cfg.num_steps
            for buffer_index in range(nbuffers):
                steps += self._collect_environment_result(buffer_index)
                if not last:
                    self._compute_actions_and_step_envs(buffer_index)
            if last:
                self.rollout_lengths.append(step + 1)
                break
        step_time = (time.monotonic() - start) * self.envs.num_envs / max(steps, 1)
        self._preemption.end_rollout(
            self.num_updates_done, RolloutEnd(steps, step_time, self._learn_seconds)
        )
        return steps

    def _collect_environment_result(self, buffer_index: int = 0) -> int:
        """Upstream's, plus the step's time-limit cuts, read from each env's
        info as upstream's loop receives it, into the storage; every env's
        info gets the metrics any env of the step has (a
        :class:`~habitat_ver.system.lockstep_pool.StepRecord` observes the
        pool's step results)."""
        envs = self.envs
        if not isinstance(envs, ObservedVectorEnv):
            raise TypeError(
                "ddppo steps an ObservedVectorEnv (habitat_ver.envs.factory."
                f"VerVectorEnvFactory builds one), not {type(envs).__name__}"
            )
        record = StepRecord()
        with envs.observing_steps(record):
            steps = super()._collect_environment_result(buffer_index)
        mark = getattr(self._agent.rollouts, "mark_truncated", None)
        if mark is not None:
            mark(record.truncated(), buffer_index)
        return steps
