"""Hydra overrides shared by the run scripts of this folder (not collected).

``marked_scripts`` copies this file beside every script it copies.
"""

from typing import List, Optional


def quiet_run(
    out: str, num_envs: int, num_steps: int, scenarios: Optional[List[str]] = None
) -> List[str]:
    """A run whose files go under ``out``, without the progress bar.

    ``scenarios`` are gym ids, ``faulty_envs``' among them (copied beside the
    script), one per env in turn.
    """
    overrides = [
        f"habitat_baselines.checkpoint_folder={out}/ck",
        f"habitat_baselines.tensorboard_dir={out}/tb",
        f"habitat_baselines.log_file={out}/train.log",
        "habitat_baselines.progress.enabled=False",
        f"habitat_baselines.num_environments={num_envs}",
        f"habitat_baselines.rl.ppo.num_steps={num_steps}",
    ]
    if scenarios:
        overrides += [
            "habitat.env_task_gym_dependencies=[habitat_ver.envs,faulty_envs]",
            f"habitat_baselines.embedded_env.scenarios=[{','.join(scenarios)}]",
        ]
    return overrides
