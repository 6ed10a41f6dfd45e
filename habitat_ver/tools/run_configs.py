"""Run several rearrange/HAB configs in one process (one interpreter and
habitat-sim start for many short runs), each into a folder of its own.

For each config, runs ``habitat_ver.run.execute_exp`` as ``python -m
habitat_baselines.run`` would, in the current folder (whose ``data/`` is
make_hab_dataset's; ``hab_data=generated`` is set), and prints one line
``RESULT {json}`` with what the run left behind::

    python -m habitat_ver.tools.run_configs OUT eval hab/tidy_house_oracle ... -- OVERRIDES...

``OUT/<config with / as _>/`` gets each run's checkpoints (``ckpt/``),
TensorBoard files, videos and log file (``run.log``).
"""

import json
import os
import sys
from typing import Any, Dict

import habitat_ver  # noqa: F401  (registration before habitat)
import torch

from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp


def run(name: str, run_type: str, out: str, overrides: list) -> dict:
    folder = os.path.join(out, name.replace("/", "_"))
    config = get_config(
        name,
        [
            "hab_data=generated",
            f"habitat_baselines.checkpoint_folder={folder}/ckpt",
            f"habitat_baselines.tensorboard_dir={folder}/tb",
            f"habitat_baselines.log_file={folder}/run.log",
            f"habitat_baselines.video_dir={folder}/video",
            *overrides,
        ],
    )
    trainer = execute_exp(config, run_type)
    result: Dict[str, Any] = {
        "config": name,
        "policy": type(trainer.agent.actor_critic).__name__,
    }
    latest = os.path.join(folder, "ckpt", "latest.pth")
    if run_type == "train" and os.path.exists(latest):
        state = torch.load(latest, map_location="cpu", weights_only=False)
        result["checkpoint_keys"] = len(state["state_dict"])
        result["checkpoint_policy"] = state["config"]["habitat_baselines"]["rl"]["policy"][
            "main_agent"
        ]["name"]
        resume = torch.load(os.path.join(folder, "ckpt", "resume-state.pth"), weights_only=False)
        result["num_updates_done"] = resume["requeue_stats"]["num_updates_done"]
        result["num_steps_done"] = resume["requeue_stats"]["num_steps_done"]
    return result


def main(argv: list) -> int:
    out, run_type, *rest = argv
    split = rest.index("--") if "--" in rest else len(rest)
    names, overrides = rest[:split], rest[split + 1 :]
    for name in names:
        print("RESULT " + json.dumps(run(name, run_type, out, overrides)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
