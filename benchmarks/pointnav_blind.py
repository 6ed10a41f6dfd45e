"""Blind PointNav on habitat-sim's simple_room: the recipe and the evaluation
of ``sample_efficiency.py --task pointnav_blind``.

The recipe is ``tests/sim/test_pointnav_learning.py``'s: a generated dataset of
0.5-1.5 m episodes, cameras removed (the point goal, GPS+compass, stays), 4
envs, T=32, hidden 64, lr 1e-3, one mini-batch, 40-step episodes.  After
training, the last checkpoint is evaluated on the 20 val episodes.
"""

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

# The benchmarks folder is not a package: its sibling modules are found by path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import trainer_sps

ROOT = Path(__file__).resolve().parents[1]

# pointnav/ver_simple_room is pointnav/ddppo_simple_room with ver's trainer and
# storage: the same PPO settings, so these overrides make one recipe for both.
SYSTEMS = {
    "ddppo": ("pointnav/ddppo_simple_room", []),
    "ver": ("pointnav/ver_simple_room", []),
}
# tests/sim/test_pointnav_learning.py's generator options and overrides.
VAL_EPISODES = 20
DATASET = (
    "--train-episodes=200",
    f"--val-episodes={VAL_EPISODES}",
    "--min-geodesic=0.5",
    "--max-geodesic=1.5",
)
OVERRIDES = [
    "habitat_baselines.num_environments=4",
    "habitat_baselines.rl.ppo.num_steps=32",
    "habitat_baselines.rl.ppo.hidden_size=64",
    "habitat_baselines.rl.ppo.lr=1e-3",
    "habitat_baselines.rl.ppo.num_mini_batch=1",
    "habitat.environment.max_episode_steps=40",
    # Blind: the point goal (GPS+compass) stays; the RGB-D CNN, whose
    # learning step takes 30-50 s an update on 2 CPU cores, goes.
    "~habitat.simulator.agents.main_agent.sim_sensors.rgb_sensor",
    "~habitat.simulator.agents.main_agent.sim_sensors.depth_sensor",
    # One checkpoint, at the end: the one evaluated.
    "habitat_baselines.num_checkpoints=1",
    # Logged means over the episodes of the last 10 updates (1280 steps, 32
    # or more episodes of <= 40 steps) rather than 50: less lag on a
    # 150-update run.  Logging only; learning is unchanged.
    "habitat_baselines.rl.ppo.reward_window_size=10",
]
# The evaluator's summary lines (habitat-baselines' habitat_evaluator).
_EVAL_METRIC = re.compile(r"Average episode (success|spl): ([0-9.]+)")


def dataset_overrides(data: str) -> List[str]:
    """Hydra overrides pointing a ``pointnav/*`` config at the dataset under ``data``."""
    from habitat_ver.tools.make_pointnav_dataset import dataset_paths

    paths = dataset_paths(data, "simple_room")
    return [
        f"habitat.dataset.data_path='{paths['data_path']}'",
        f"habitat.dataset.scenes_dir={paths['scenes_dir']}",
    ]


def eval_metrics(log_text: str) -> Dict[str, float]:
    """``{"success": ..., "spl": ...}`` from an evaluation's log (what it printed)."""
    return {name: float(value) for name, value in _EVAL_METRIC.findall(log_text)}


def evaluation(config: str, overrides: List[str]) -> Callable[[str], Dict[str, Any]]:
    """What :func:`trainer_sps.run_variant` runs after training: the last
    checkpoint on the val split (``{"eval": {"success", "spl"}}`` or
    ``{"eval": {"error": [last lines]}}``)."""

    def evaluate(out: str) -> Dict[str, Any]:
        cmd = [
            sys.executable,
            *trainer_sps.DEFAULT_LAUNCHER,
            f"--config-name={config}",
            f"habitat_baselines.checkpoint_folder={out}/ck",
            f"habitat_baselines.tensorboard_dir={out}/eval_tb",
            f"habitat_baselines.log_file={out}/eval.log",
            *overrides,
            "habitat_baselines.evaluate=True",
            "habitat_baselines.eval.split=val",
            f"habitat_baselines.eval_ckpt_path_dir={out}/ck/latest.pth",
            f"habitat_baselines.test_episode_count={VAL_EPISODES}",
        ]
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        result: Dict[str, Any] = eval_metrics(done.stdout + done.stderr)
        if done.returncode != 0 or set(result) != {"success", "spl"}:
            result = {"error": done.stderr.strip().splitlines()[-3:]}
        return {"eval": {**result, "wall_s": time.monotonic() - start}}

    return evaluate
