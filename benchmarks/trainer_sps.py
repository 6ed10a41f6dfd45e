"""Steps per second of the trainers, side by side in one run (not a test).

Runs each trainer on the same workload and step budget, one after the other on
this machine, and reports mean steps/s (habitat's own ``fps``: steps done over
wall time), max steps/s (the best interval between two log lines) and the
ratios the VER issue names: ver/ddppo, ver/NoVER and ours/upstream ver.

    # both workloads (homogeneous My Way Home, mixed scenarios + stragglers):
    .venv/bin/python benchmarks/trainer_sps.py --envs 16 --num-steps 128 --steps 40000
    # one config only:
    .venv/bin/python benchmarks/trainer_sps.py --config gym/ddppo_cartpole --steps 40000
    # the real simulator (habitat-sim installed): PointNav on simple_room, RGB-D
    # 128x128 rendered by llvmpipe, navmesh physics; the dataset is generated
    # into data/ first if it is missing
    .venv/bin/python benchmarks/trainer_sps.py --workloads pointnav --envs 8 --steps 4096

Writes JSON (git SHA, machine, settings, per-system results, ratios) and a
bar plot of mean steps/s next to it (``--out``).
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
from typing import Dict, Optional

ROOT = Path(__file__).resolve().parents[1]

# name -> extra Hydra overrides on top of the given (ddppo) config.
VARIANTS = {
    "ddppo": [],
    "ver": [
        "habitat_baselines.trainer_name=ver",
        "habitat_baselines.rollout_storage_name=VERStorage",
    ],
    "nover": [
        "habitat_baselines.trainer_name=ver",
        "habitat_baselines.rollout_storage_name=VERStorage",
        "habitat_baselines.rl.ver.variable_experience=False",
    ],
    "ver_overlap": [
        "habitat_baselines.trainer_name=ver",
        "habitat_baselines.rollout_storage_name=VERStorage",
        "habitat_baselines.rl.ver.overlap_rollouts_and_learn=True",
    ],
    "upstream_ddppo": ["habitat_baselines.trainer_name=upstream_ddppo"],
    # habitat-baselines' own VER, on the same envs (its default 2 inference workers).
    "upstream_ver": ["habitat_baselines.trainer_name=upstream_ver"],
}


def _git_sha() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


# Named workloads: (a) homogeneous, (b) heterogeneous (the VER issue's two),
# (c) habitat-lab's PointNav on the real simulator (needs habitat-sim).
WORKLOADS = {
    "homogeneous": "doom/ddppo_my_way_home",
    "heterogeneous": "doom/ddppo_mixed_stragglers",
    "pointnav": "pointnav/ddppo_simple_room",
}
DEFAULT_WORKLOADS = ["homogeneous", "heterogeneous"]
# The dataset the pointnav/* configs read (relative to the repository root).
POINTNAV_DATASET = ROOT / "data/datasets/pointnav/simple_room/v1/train/train.json.gz"
# Updates left out of the steady rate (start-up: env creation, first batches).
WARMUP_UPDATES = 2

# The ratios reported per workload: (numerator, denominator).
RATIOS = [("ver", "ddppo"), ("ver", "nover"), ("ver", "upstream_ver"), ("ver_overlap", "ver")]


# Our trainers log ``update: 10\tsteps: 640\tsystem/sps: 1975.046``
# (habitat_ver/trainers/training_log.py); upstream's ``ddppo`` logs
# ``update: 10\tfps: 1975.046`` and ``Num frames 640`` on the next line, and
# upstream's ``ver`` ``update: 10\tfps: 1975.0\twindow fps: ...\tframes: 640``.
OUR_LINE = re.compile(r"update: \d+\tsteps: (\d+)\tsystem/sps: ([0-9.]+)")
UPSTREAM_FPS = re.compile(r"update: \d+\s+fps: ([0-9.]+)")
UPSTREAM_FRAMES = re.compile(r"(?:Num frames |\tframes: )(\d+)")


def _fps_and_frames(log_text: str):
    """``([steps/s], [steps])`` of each log line, in either trainer's format."""
    ours = OUR_LINE.findall(log_text)
    if ours:
        return [float(s) for _, s in ours], [int(f) for f, _ in ours]
    fps = [float(v) for v in UPSTREAM_FPS.findall(log_text)]
    return fps, [int(v) for v in UPSTREAM_FRAMES.findall(log_text)]


def sps_from_log(log_text: str) -> Dict[str, float]:
    """Mean and max steps/s from the trainers' log lines.

    Each line gives the steps done and the steps/s over the wall time so far
    (see :data:`OUR_LINE` for the formats), so each pair gives the elapsed
    time ``steps / sps``, and consecutive pairs an interval's steps/s.  The
    last steps/s is the run's mean.
    """
    fps, frames = _fps_and_frames(log_text)
    if not fps or len(fps) != len(frames):
        raise ValueError(f"the run's log has {len(fps)} fps lines and {len(frames)} frame counts")
    elapsed = [f / s for f, s in zip(frames, fps) if s > 0]
    intervals = [
        (f1 - f0) / (e1 - e0)
        for f0, f1, e0, e1 in zip(frames, frames[1:], elapsed, elapsed[1:])
        if e1 > e0
    ]
    # Steady: steps/s from the end of update WARMUP_UPDATES to the last log line.
    first = min(WARMUP_UPDATES - 1, len(elapsed) - 1)  # line i: update i + 1
    steady = fps[-1]
    if len(elapsed) - first > 1 and elapsed[-1] > elapsed[first]:
        steady = (frames[-1] - frames[first]) / (elapsed[-1] - elapsed[first])
    return {"sps": fps[-1], "max_sps": max(intervals, default=fps[-1]), "steady_sps": steady}


def ensure_pointnav_dataset(stages_dir: Optional[str]) -> None:
    """Generate the pointnav/* configs' dataset into ``data/`` if it is missing."""
    if POINTNAV_DATASET.exists():
        return
    print(f"generating {POINTNAV_DATASET.relative_to(ROOT)} ...", flush=True)
    cmd = [sys.executable, "-m", "habitat_ver.tools.make_pointnav_dataset"]
    done = subprocess.run(
        cmd + (["--stages-dir", stages_dir] if stages_dir else []),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"dataset generation failed: {done.stderr.strip().splitlines()[-1:]}")


def run_variant(config: str, steps: int, extra: list, envs: int, num_steps: Optional[int]) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "habitat_ver.run",
            f"--config-name={config}",
            f"habitat_baselines.total_num_steps={steps}",
            "habitat_baselines.num_updates=-1",
            f"habitat_baselines.num_environments={envs}",
            f"habitat_baselines.checkpoint_folder={out}/ck",
            f"habitat_baselines.tensorboard_dir={out}/tb",
            f"habitat_baselines.log_file={out}/train.log",
            "habitat_baselines.progress.enabled=False",
            "habitat_baselines.log_interval=1",
            *([f"habitat_baselines.rl.ppo.num_steps={num_steps}"] if num_steps else []),
            *extra,
        ]
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.monotonic() - start
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1:], "wall_s": wall}
        # habitat's logger writes to stderr (and the log file, where a trainer
        # sets one up; upstream's VER does not).
        try:
            return {**sps_from_log(done.stderr + done.stdout), "wall_s": wall}
        except ValueError as error:  # one system's odd log must not lose the others
            return {"error": [str(error)], "wall_s": wall}


def ratios(results: Dict[str, dict]) -> Dict[str, float]:
    """``a/b`` of mean (and steady) steps/s for each pair in :data:`RATIOS` both ran."""
    out = {}
    for a, b in RATIOS:
        if "sps" in results.get(a, {}) and "sps" in results.get(b, {}):
            out[f"{a}/{b}"] = results[a]["sps"] / results[b]["sps"]
            out[f"{a}/{b} steady"] = results[a]["steady_sps"] / results[b]["steady_sps"]
    return out


def print_table(title: str, results: Dict[str, dict]) -> None:
    base = results.get("ddppo", {}).get("sps")
    print(title)
    steady_base = results.get("ddppo", {}).get("steady_sps")
    print(
        f"{'trainer':16s} {'mean steps/s':>13s} {'steady steps/s':>15s} {'max steps/s':>12s} "
        f"{'vs ddppo':>9s} {'steady vs ddppo':>16s}"
    )
    for name, res in results.items():
        if "sps" not in res:
            print(f"{name:16s} failed: {res['error']}")
            continue
        ratio = f"{res['sps'] / base:.2f}x" if base else "-"
        steady = f"{res['steady_sps'] / steady_base:.2f}x" if steady_base else "-"
        print(
            f"{name:16s} {res['sps']:13.1f} {res['steady_sps']:15.1f} {res['max_sps']:12.1f} "
            f"{ratio:>9s} {steady:>16s}"
        )
    for name, value in ratios(results).items():
        print(f"  {name}: {value:.2f}x")


def plot(report: dict, path: Path) -> None:
    """One bar group per workload: mean steps/s of each system."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    workloads = report["workloads"]
    systems = sorted({s for w in workloads.values() for s in w["results"]})
    fig, ax = plt.subplots(figsize=(2 + 1.6 * len(workloads) * len(systems) / 3, 4))
    width = 0.8 / max(len(systems), 1)
    for i, system in enumerate(systems):
        values = [w["results"].get(system, {}).get("sps", 0.0) for w in workloads.values()]
        ax.bar([x + i * width for x in range(len(workloads))], values, width, label=system)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(workloads))])
    ax.set_xticklabels(list(workloads))
    ax.set_ylabel("mean steps/s")
    ax.set_title(f"{report['envs']} envs, T={report['num_steps']}, {report['cpus']} CPUs")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="one config instead of the named workloads")
    parser.add_argument(
        "--workloads", nargs="+", default=DEFAULT_WORKLOADS, choices=list(WORKLOADS)
    )
    parser.add_argument("--steps", type=int, default=40000)
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument(
        "--num-steps", type=int, default=None, help="rollout length T (default: the config's)"
    )
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument(
        "--stages-dir",
        default=None,
        help="habitat-sim's test stages, for the pointnav dataset "
        "(default: the generator's, ../shared/habitat-sim/...)",
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/trainer_sps.json"))
    args = parser.parse_args()
    configs = (
        {args.config: args.config} if args.config else {w: WORKLOADS[w] for w in args.workloads}
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = dict(
        git_sha=_git_sha(),
        machine=platform.platform(),
        cpus=os.cpu_count(),
        steps=args.steps,
        envs=args.envs,
        num_steps=args.num_steps,
        load_before=os.getloadavg(),
        workloads={},
    )
    for name, config in configs.items():
        if config.startswith("pointnav/"):
            ensure_pointnav_dataset(args.stages_dir)
        results = {}
        for variant in args.variants:
            results[variant] = run_variant(
                config, args.steps, VARIANTS[variant], args.envs, args.num_steps
            )
            # Written after every system, so an interrupted run keeps what it measured.
            report["workloads"][name] = dict(config=config, results=results, ratios=ratios(results))
            partial = out.with_suffix(".json.tmp")
            partial.write_text(json.dumps(report, indent=2))
            os.replace(partial, out)  # atomic: a reader never sees half a file
        print_table(
            f"{name} ({config}), {args.envs} envs, {args.steps} steps, {os.cpu_count()} CPUs",
            results,
        )
    report["load_after"] = os.getloadavg()
    out.write_text(json.dumps(report, indent=2))
    print(
        f"load average (1, 5, 15 min): before {report['load_before']}, after {report['load_after']}"
    )
    plot(report, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
