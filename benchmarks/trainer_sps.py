"""Steps per second of the trainers, side by side in one run (not a test).

Runs each trainer on the same config and step budget, one after the other on
this machine, and reports mean steps/s (the last ``fps`` line of each run's
log, habitat's own measure) and the ratio to our ``ddppo``.

    .venv/bin/python benchmarks/trainer_sps.py --config gym/ddppo_cartpole --steps 40000
    .venv/bin/python benchmarks/trainer_sps.py --config doom/ddppo_mixed_stragglers --steps 6000

Writes JSON with the git SHA, machine and settings to ``--out``.
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# name -> extra Hydra overrides on top of the given (ddppo) config.
VARIANTS = {
    "ddppo": [],
    "ver": ["habitat_baselines.trainer_name=ver",
            "habitat_baselines.rollout_storage_name=VERStorage"],
    "nover": ["habitat_baselines.trainer_name=ver",
              "habitat_baselines.rollout_storage_name=VERStorage",
              "habitat_baselines.rl.ver.variable_experience=False"],
    "ver_overlap": ["habitat_baselines.trainer_name=ver",
                    "habitat_baselines.rollout_storage_name=VERStorage",
                    "habitat_baselines.rl.ver.overlap_rollouts_and_learn=True"],
    "upstream_ddppo": ["habitat_baselines.trainer_name=upstream_ddppo"],
    # habitat-baselines' own VER, on the same envs (its default 2 inference workers).
    "upstream_ver": ["habitat_baselines.trainer_name=upstream_ver"],
}


def _git_sha() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def _last_fps(log_text: str) -> float:
    # PPOTrainer's log line: "update: 10\tfps: 1975.046"; the last one is the
    # mean over the whole run (steps done / wall time).
    values = re.findall(r"fps: ([0-9.]+)", log_text)
    if not values:
        raise RuntimeError("no fps line in the run's log")
    return float(values[-1])


def run_variant(config: str, steps: int, extra: list, envs: int) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable, "-m", "habitat_ver.run", f"--config-name={config}",
            f"habitat_baselines.total_num_steps={steps}", "habitat_baselines.num_updates=-1",
            f"habitat_baselines.num_environments={envs}",
            f"habitat_baselines.checkpoint_folder={out}/ck",
            f"habitat_baselines.tensorboard_dir={out}/tb",
            f"habitat_baselines.log_file={out}/train.log",
            "habitat_baselines.progress.enabled=False", "habitat_baselines.log_interval=1",
            *extra,
        ]
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.monotonic() - start
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1:], "wall_s": wall}
        # habitat's logger writes to stderr (and the log file, where a trainer
        # sets one up; upstream's VER does not).
        return {"sps": _last_fps(done.stderr + done.stdout), "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="gym/ddppo_cartpole")
    parser.add_argument("--steps", type=int, default=40000)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/trainer_sps.json"))
    args = parser.parse_args()
    results = {name: run_variant(args.config, args.steps, VARIANTS[name], args.envs)
               for name in args.variants}
    base = results.get("ddppo", {}).get("sps")
    print(f"{args.config}, {args.envs} envs, {args.steps} steps, {os.cpu_count()} CPUs")
    print(f"{'trainer':16s} {'steps/s':>10s} {'vs ddppo':>9s}")
    for name, res in results.items():
        if "sps" not in res:
            print(f"{name:16s} failed: {res['error']}")
            continue
        ratio = f"{res['sps'] / base:.2f}x" if base else "-"
        print(f"{name:16s} {res['sps']:10.1f} {ratio:>9s}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(dict(
        git_sha=_git_sha(), machine=platform.platform(), cpus=os.cpu_count(),
        config=args.config, steps=args.steps, envs=args.envs, results=results,
    ), indent=2))


if __name__ == "__main__":
    main()
