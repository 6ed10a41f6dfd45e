"""Checkpoints and resume states of every habitat-ver trainer.

:class:`CheckpointingTrainer` is the layer between upstream's ``PPOTrainer``
and :class:`~habitat_ver.trainers.base.HabitatVerTrainer`: it writes
checkpoints (``ckpt.N.pth`` and ``latest.pth``, config as plain data) and the
resume state atomically (:mod:`habitat_ver.common.checkpoint`), reads upstream's
checkpoints too, and carries the run's counters across a restart.  A trainer
adds its own counters through the :meth:`~CheckpointingTrainer._extra_resume_stats`
and :meth:`~CheckpointingTrainer._restore_extra_stats` hooks.
"""

import time
from collections import deque
from typing import Any, Dict, List, Optional

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
from habitat_ver.config.stored import with_current_code


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

    def _get_resume_state_config_or_new_config(self, resume_state_config: Any) -> Any:
        """Upstream's choice between the stored and the current config, but the
        code to run (``_target_`` nodes, imported modules) is always this run's."""
        config = super()._get_resume_state_config_or_new_config(resume_state_config)
        if config is None:
            return config
        return with_current_code(config, self.config)

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
