"""Run by test_appo_workers.py in a fresh interpreter (not collected).

Trains appo on three CartPoles and an env that raises at its third step and
prints the error the run raised.  Usage: appo_faulty_run.py processes|serial OUT
"""

import sys

from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp
from habitat_ver.system.worker_pool import EnvWorkerError


def main():
    out = sys.argv[2]
    overrides = [
        f"habitat_baselines.checkpoint_folder={out}/ck",
        f"habitat_baselines.tensorboard_dir={out}/tb",
        f"habitat_baselines.log_file={out}/train.log",
        "habitat_baselines.progress.enabled=False",
        "habitat_baselines.num_environments=4",
        "habitat_baselines.total_num_steps=-1",
        "habitat_baselines.num_updates=50",
        "habitat_baselines.rl.ppo.num_steps=8",
        "habitat.env_task_gym_dependencies=[habitat_ver.envs,faulty_envs]",
        "habitat_baselines.embedded_env.scenarios=[CartPole-v1,RaisesOnThirdStep-v0,CartPole-v1,CartPole-v1]",
        f"habitat_baselines.rl.appo.serial={sys.argv[1] == 'serial'}",
    ]
    try:
        execute_exp(get_config("gym/appo_cartpole", overrides), "train")
    except EnvWorkerError as error:
        print(f"ERROR: {error}")
        return
    print("no error")


if __name__ == "__main__":
    main()
