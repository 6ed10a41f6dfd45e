"""Run by test_trainer_faults.py in a fresh interpreter (not collected).

``ddppo`` on four lock-stepped envs: 0 and 2 cut at 3 steps, 1 and 3 at 5,
so on the steps where two of them end, only those two report gym's
``TimeLimit.truncated``.  Prints each env's episode count and its summed
``TimeLimit.truncated`` metric.
Usage: ddppo_metrics_run.py OUT
"""

import sys

from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp

if __name__ == "__main__":
    out = sys.argv[1]
    config = get_config(
        "gym/ddppo_cartpole",
        [
            f"habitat_baselines.checkpoint_folder={out}/ck",
            f"habitat_baselines.tensorboard_dir={out}/tb",
            f"habitat_baselines.log_file={out}/train.log",
            "habitat_baselines.progress.enabled=False",
            "habitat_baselines.num_environments=4",
            "habitat_baselines.total_num_steps=-1",
            "habitat_baselines.num_updates=2",
            "habitat_baselines.rl.ppo.num_steps=15",
            "habitat.env_task_gym_dependencies=[habitat_ver.envs,faulty_envs]",
            "habitat_baselines.embedded_env.scenarios=[CutAt3CartPole-v0,CutAt5CartPole-v0]",
        ],
    )
    trainer = execute_exp(config, "train")
    stats = trainer.running_episode_stats
    print("count:", stats["count"].view(-1).tolist())
    print("truncated:", stats["TimeLimit.truncated"].view(-1).tolist())
