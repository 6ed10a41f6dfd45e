"""Run by test_trainer_faults.py in a fresh interpreter (not collected).

``python -m habitat_ver.run`` with the ddppo trainer on CartPole (env 0) and
a faulty env (env 1), hang warning after 1 s.
Usage: ddppo_faulty_run.py raises|hangs OUT
"""

import sys

from habitat_ver.run import main

if __name__ == "__main__":
    faulty, out = (
        {"raises": "RaisesOnThirdStep-v0", "hangs": "HangsOnThirdStep-v0"}[sys.argv[1]],
        sys.argv[2],
    )
    main(
        [
            "--config-name=gym/ddppo_cartpole",
            f"habitat_baselines.checkpoint_folder={out}/ck",
            f"habitat_baselines.tensorboard_dir={out}/tb",
            f"habitat_baselines.log_file={out}/train.log",
            "habitat_baselines.progress.enabled=False",
            "habitat_baselines.num_environments=2",
            "habitat_baselines.rl.ppo.num_steps=8",
            "habitat.env_task_gym_dependencies=[habitat_ver.envs,faulty_envs]",
            f"habitat_baselines.embedded_env.scenarios=[CartPole-v1,{faulty}]",
            "habitat_baselines.env_workers.hang_warning_seconds=1",
        ]
    )
