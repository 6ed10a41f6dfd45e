"""Checkpoints and resume states of every habitat-ver trainer.

:class:`CheckpointingTrainer` is the layer between upstream's ``PPOTrainer``
and :class:`~habitat_ver.trainers.base.HabitatVerTrainer`: it writes
checkpoints (``ckpt.N.pth`` and ``latest.pth``, config as plain data) and the
resume state atomically (:mod:`habitat_ver.common.checkpoint`), reads upstream's
checkpoints too, and carries the run's counters across a restart.  A trainer
adds its own counters through the :meth:`~CheckpointingTrainer._extra_resume_stats`
and :meth:`~CheckpointingTrainer._restore_extra_stats` hooks.

Which config a resumed run or an evaluated checkpoint uses is decided here
too (:meth:`CheckpointingTrainer._get_resume_state_config_or_new_config`,
:mod:`habitat_ver.config.resumed_config`): the stored one, less its code and
file locations, with the command's budget (training) or evaluation settings,
and one warning naming every other value of the command that is not used.
"""

import time
from collections import deque
from typing import Any, Dict, List, Optional, Set, Tuple

import torch
from habitat import logger
from habitat_baselines.rl.ddppo.ddp_utils import rank0_only
from habitat_baselines.rl.ppo.ppo_trainer import PPOTrainer

from habitat_ver.common.checkpoint import (
    ResumeStateFiles,
    config_to_plain,
    load_checkpoint_file,
    save_checkpoint_file,
)
from habitat_ver.config.resumed_config import (
    BUDGET_KEYS,
    EVALUATION_KEYS,
    changed_budget,
    differences,
    unused_values_warning,
    with_command_values,
)
from habitat_ver.config.stored import with_current_code


def _budget(config: Any) -> Tuple[str, float]:
    """The key that sets the run's length, and its value."""
    baselines = config.habitat_baselines
    if baselines.num_updates != -1:
        return "num_updates", float(baselines.num_updates)
    return "total_num_steps", float(baselines.total_num_steps)


class CheckpointingTrainer(PPOTrainer):
    """Upstream's PPO trainer whose checkpoints and resume states are ours."""

    def __init__(self, config: Any = None):
        super().__init__(config)
        # Steps each rollout of this rank collected (short ones were preempted).
        self.rollout_lengths: List[int] = []
        # Seconds the run trained before this session (resumed runs).
        self._prev_time = 0.0
        self._count_checkpoints = 0
        self._last_checkpoint_step: Optional[float] = None
        # num_updates_done of the resume state on disk (None: none written yet).
        self._resume_state_update: Optional[float] = None
        # TensorBoard run id, so that a resumed run appends to the same events.
        self._run_id: Optional[str] = None
        # The checkpoint being evaluated (None: training).
        self._evaluating: Optional[str] = None
        # The unused command values already reported (a folder's evaluation
        # would repeat the warning for every checkpoint).
        self._reported_unused: Set[Tuple[Any, ...]] = set()

    # ----------------------------------------------------------- checkpoints
    @rank0_only
    def save_checkpoint(self, file_name: str, extra_state: Optional[Dict] = None) -> None:
        """Write ``file_name`` and ``latest.pth`` atomically, config as plain data."""
        checkpoint = {
            **self._agent.get_save_state(),
            "config": config_to_plain(self.config),
        }
        if extra_state is not None:
            checkpoint["extra_state"] = extra_state
        folder = self.config.habitat_baselines.checkpoint_folder
        save_checkpoint_file(checkpoint, f"{folder}/{file_name}")
        save_checkpoint_file(checkpoint, f"{folder}/latest.pth")

    def _maybe_checkpoint(self, final: bool = False) -> None:
        """Checkpoint on upstream's schedule, and once more at the end of a run.

        Upstream's percent-based schedule starts at 0% and may never reach the
        last update; the final weights are always saved here.  The resume
        state is saved with every checkpoint, so a crash loses no more than the
        work since the last checkpoint, and a restart never starts over beside
        checkpoints it would overwrite.
        """
        if not rank0_only():
            return
        if final:
            # Only weights not saved yet: upstream's interval schedule
            # (num_updates_done % checkpoint_interval) would say yes again.
            due = self._last_checkpoint_step != self.num_steps_done
        else:
            due = self.should_checkpoint()
        if due:
            self._last_checkpoint_step = self.num_steps_done
            self.save_checkpoint(
                f"ckpt.{self._count_checkpoints}.pth",
                dict(
                    step=self.num_steps_done,
                    wall_time=(time.time() - self.t_start) + self._prev_time,
                    # 1 on the run's last checkpoint: a folder's evaluation ends there.
                    percent_done=self.percent_done(),
                ),
            )
            self._count_checkpoints += 1
            self._save_resume_state()

    def load_checkpoint(self, checkpoint_path: str, *args: Any, **kwargs: Any) -> Dict:
        """Safe load of our checkpoints and of upstream-format ones."""
        return load_checkpoint_file(checkpoint_path)

    def _eval_checkpoint(self, checkpoint_path: str, *args: Any, **kwargs: Any) -> None:
        self._evaluating = checkpoint_path
        try:
            super()._eval_checkpoint(checkpoint_path, *args, **kwargs)
        finally:
            self._evaluating = None

    def _get_resume_state_config_or_new_config(self, resume_state_config: Any) -> Any:
        """The config a resumed run or an evaluated checkpoint runs with.

        With ``load_resume_state_config=True`` the stored one (upstream's
        rule) with this run's code and folders (:func:`with_current_code`),
        and this command's budget (training) or evaluation settings
        (:mod:`habitat_ver.config.resumed_config`); every other value of the
        command that differs is named in one warning.  Upstream printed one
        banner for any difference, also for the values it honoured.  A
        checkpoint without a config (and ``load_resume_state_config=False``)
        runs with this command's.
        """
        baselines = self.config.habitat_baselines
        if resume_state_config is None or not baselines.load_resume_state_config:
            return self.config.copy()
        stored = with_current_code(resume_state_config, self.config)
        training = self._evaluating is None
        used = with_command_values(
            stored, self.config, BUDGET_KEYS if training else EVALUATION_KEYS
        )
        self._report_unused(differences(self.config, used), training)
        if training:
            for key, new, old in changed_budget(resume_state_config, used):
                logger.info(
                    f"{key}={new!r} (the run's stored value: {old!r}): training goes on to it"
                )
        return used

    def _report_unused(self, found: List[Tuple[str, Any, Any]], training: bool) -> None:
        if not found or tuple(found) in self._reported_unused:
            return
        self._reported_unused.add(tuple(found))
        if training:
            what = f"resuming the run in {self.config.habitat_baselines.checkpoint_folder}"
            way_out = (
                "only the budget (habitat_baselines.total_num_steps, num_updates) is "
                "taken from the command; to train with other values, start a new run "
                "in another habitat_baselines.checkpoint_folder"
            )
        else:
            what = f"evaluating {self._evaluating}"
            way_out = (
                "the evaluation's own settings (test_episode_count, eval.*, "
                "num_environments) are the command's; to build the env and policy "
                "from the command too, set habitat_baselines.load_resume_state_config=False"
            )
        logger.warning(unused_values_warning(found, what, way_out))

    # ----------------------------------------------------------- resume state
    def _resume_files(self) -> ResumeStateFiles:
        return ResumeStateFiles(self.config.habitat_baselines.checkpoint_folder)

    @rank0_only
    def _save_resume_state(self) -> None:
        """Write the resume state, unless it was written at this update already
        (a second write would make the ``.prev`` fallback the same state)."""
        if self._resume_state_update == self.num_updates_done:
            return
        self._resume_state_update = self.num_updates_done
        stats = dict(
            count_checkpoints=self._count_checkpoints,
            last_checkpoint_step=self._last_checkpoint_step,
            num_steps_done=self.num_steps_done,
            num_updates_done=self.num_updates_done,
            _last_checkpoint_percent=self._last_checkpoint_percent,
            prev_time=(time.time() - self.t_start) + self._prev_time,
            running_episode_stats=dict(self.running_episode_stats),
            # deques are not loadable with weights_only: store lists.
            window_episode_stats={k: list(v) for k, v in self.window_episode_stats.items()},
            run_id=self._run_id,
            rollout_lengths=list(self.rollout_lengths),
            world_size=self._world_size(),
            **self._extra_resume_stats(),
        )
        self._resume_files().save(
            dict(
                **self._agent.get_resume_state(),
                config=config_to_plain(self.config),
                requeue_stats=stats,
            )
        )

    def _world_size(self) -> int:
        return torch.distributed.get_world_size() if self._is_distributed else 1

    def _extra_resume_stats(self) -> Dict[str, Any]:
        """Hook: a subclass's own counters for the resume state (plain data)."""
        return {}

    def _restore_extra_stats(self, stats: Dict[str, Any]) -> None:
        """Hook: reads back what :meth:`_extra_resume_stats` saved."""

    def _restore(self, resume_state: Dict[str, Any]) -> None:
        self._agent.load_state_dict(resume_state)
        stats = resume_state["requeue_stats"]
        self.num_steps_done = stats["num_steps_done"]
        self.num_updates_done = stats["num_updates_done"]
        self._last_checkpoint_percent = stats["_last_checkpoint_percent"]
        self._count_checkpoints = stats["count_checkpoints"]
        # Restarting a finished run must not save its last weights once more.
        self._last_checkpoint_step = stats.get("last_checkpoint_step")
        self._prev_time = stats["prev_time"]
        self._run_id = stats.get("run_id")
        self.rollout_lengths = list(stats.get("rollout_lengths", []))
        self._restore_extra_stats(stats)
        self._resume_state_update = self.num_updates_done  # the state on disk
        ranks = self._world_size()
        saved_ranks = stats.get("world_size", ranks)
        if saved_ranks != ranks:
            logger.warning(
                f"resuming a run of {saved_ranks} rank(s) on {ranks}: "
                f"each update now collects {ranks}/{saved_ranks} of the "
                "steps it did, and the step budget is reached in a different number "
                "of updates"
            )
        self.running_episode_stats = stats["running_episode_stats"]
        window = self._ppo_cfg.reward_window_size
        for key, values in stats["window_episode_stats"].items():
            self.window_episode_stats[key] = deque(values, maxlen=window)
        logger.info(f"Resumed from step {self.num_steps_done} (update {self.num_updates_done})")
        self._adopt_budget(resume_state["config"])

    def _adopt_budget(self, stored_config: Any) -> None:
        """Goes on to this command's budget where it differs from the run's
        stored one; says so when there is nothing left to train."""
        old_key, old = _budget(stored_config)
        new_key, new = _budget(self.config)
        if (old_key, old) != (new_key, new):
            # Upstream's percent-based checkpoint schedule measured the last
            # checkpoint against the old budget: after a raise none would be due.
            if old_key == new_key:
                self._last_checkpoint_percent *= old / new
            else:
                self._last_checkpoint_percent = min(
                    self._last_checkpoint_percent, self.percent_done()
                )
        if self.is_done():
            done = self.num_updates_done if new_key == "num_updates" else self.num_steps_done
            logger.info(
                f"the run in {self.config.habitat_baselines.checkpoint_folder} is finished "
                f"({done:g} of habitat_baselines.{new_key}={new:g}): nothing to train; "
                f"raise habitat_baselines.{new_key} to train on"
            )
