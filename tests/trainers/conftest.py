"""Shared settings for trainer tests: tiny CartPole runs writing to tmp dirs."""

from typing import Any, Dict, List

import pytest

# The CartPole learning checks (marked slow; CI runs them too): the budget, and
# what "learned" means.  Returns are the mean over the reward window, one per
# update; the cap is 500 and a random policy gets ~22.  Not the last window:
# with the configs' 10-20 PPO epochs per update the return swings on CartPole,
# and runs that had solved it ended at 132 (ver), 211 (appo) and 393.7 (ddppo).
# In 300k-step runs every trainer first reached 400 by 75k steps.
CARTPOLE_STEPS = 150_000
CARTPOLE_BAR = 400.0
CARTPOLE_SECOND_HALF = 200.0


def run_overrides(out_dir, num_updates: int = 3, num_envs: int = 2) -> List[str]:
    """Hydra overrides for a short, quiet run whose files go under ``out_dir``."""
    return [
        f"habitat_baselines.checkpoint_folder={out_dir}/checkpoints",
        f"habitat_baselines.tensorboard_dir={out_dir}/tb",
        f"habitat_baselines.log_file={out_dir}/train.log",
        f"habitat_baselines.eval_ckpt_path_dir={out_dir}/checkpoints",
        f"habitat_baselines.video_dir={out_dir}/video",
        f"habitat_baselines.num_environments={num_envs}",
        "habitat_baselines.total_num_steps=-1",
        f"habitat_baselines.num_updates={num_updates}",
        "habitat_baselines.num_checkpoints=1",
        "habitat_baselines.log_interval=1",
        "habitat_baselines.progress.enabled=False",
        "habitat_baselines.rl.ppo.num_steps=16",
        "habitat_baselines.rl.ppo.ppo_epoch=2",
        "habitat_baselines.rl.ppo.num_mini_batch=1",
        "habitat_baselines.rl.preemption.save_resume_state_interval=1",
    ]


def tensorboard_scalars(folder) -> Dict[str, List[float]]:
    """Every scalar logged under ``folder``, by tag, in step order.

    Read without TensorBoard's restart purge: a training file and an evaluation
    file opened in the same second by one process sort by the writer's counter
    as text ("...pid.10" before "...pid.9"), and the purge at the training
    file's ``purge_step`` start would then drop the eval point read first.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), purge_orphaned_data=False)
    events.Reload()
    return {tag: [s.value for s in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


@pytest.fixture
def out_dir(tmp_path):
    return tmp_path / "run"


def cartpole_learning_overrides(out_dir, ppo_epoch: int) -> List[str]:
    """A learning check's run: 8 envs, the config's 32-step rollouts."""
    return run_overrides(out_dir) + [
        "habitat_baselines.num_environments=8",
        "habitat_baselines.num_updates=-1",
        f"habitat_baselines.total_num_steps={CARTPOLE_STEPS}",
        "habitat_baselines.rl.ppo.num_steps=32",
        f"habitat_baselines.rl.ppo.ppo_epoch={ppo_epoch}",
        "habitat_baselines.rl.preemption.save_resume_state_interval=100",
    ]


def assert_learned_cartpole(trainer: Any) -> None:
    """Reached the bar within the budget and held well above chance after it:
    the mean window over the run's second half."""
    assert trainer.num_steps_done >= CARTPOLE_STEPS
    windows = [value for _, value in trainer.curve_points["reward"]]
    assert len(windows) > 100
    assert max(windows) >= CARTPOLE_BAR
    second_half = windows[len(windows) // 2 :]
    mean = sum(second_half) / len(second_half)
    assert mean >= CARTPOLE_SECOND_HALF, (mean, second_half[-10:])
