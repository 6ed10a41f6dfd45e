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
from quiet_run import quiet_run  # copied beside this script

if __name__ == "__main__":
    out = sys.argv[1]
    config = get_config(
        "gym/ddppo_cartpole",
        quiet_run(out, 4, 15, ["CutAt3CartPole-v0", "CutAt5CartPole-v0"])
        + ["habitat_baselines.total_num_steps=-1", "habitat_baselines.num_updates=2"],
    )
    trainer = execute_exp(config, "train")
    stats = trainer.running_episode_stats
    print("count:", stats["count"].view(-1).tolist())
    print("truncated:", stats["TimeLimit.truncated"].view(-1).tolist())
