"""Return against env steps for ddppo, ver, ver + overlap and appo (not a test).

Issue 18, item 4: a speed-up that costs learning must show next to the speed.
One learnable workload, gym's CartPole-v1 (each system with its config's
recipe: ``gym/ddppo_cartpole``, ``gym/ver_cartpole`` with and without
``overlap_rollouts_and_learn``, ``gym/appo_cartpole``), by default behind the
straggler wrapper (speed factors 1-4x, so VER's variable experience and appo's
asynchrony see envs of different speed, as on workload (c)), several seeds
each.  Returns are read from each run's TensorBoard (``benchmarks/run_logs.py``,
the parser ``trainer_sps.py`` uses).  Writes JSON (curves per system and seed,
final return, steps to reach ``--threshold``, steady steps/s) atomically and a
PNG: the mean over seeds (thick) and every seed (thin) per system.

    # full: 4 systems x 3 seeds x 300k steps (about 1 h on a quiet 2-core machine)
    .venv/bin/python benchmarks/sample_efficiency.py
    # reduced (shows it works): 1 seed, 20k steps
    .venv/bin/python benchmarks/sample_efficiency.py --seeds 1 --steps 20000
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

# The benchmarks folder is not a package: its sibling modules are found by path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import sps_report
import trainer_sps

ROOT = Path(__file__).resolve().parents[1]

# system -> (config, extra overrides)
SYSTEMS = {
    "ddppo": ("gym/ddppo_cartpole", []),
    "ver": ("gym/ver_cartpole", []),
    "ver_overlap": (
        "gym/ver_cartpole",
        ["habitat_baselines.rl.ver.overlap_rollouts_and_learn=True"],
    ),
    "appo": ("gym/appo_cartpole", []),
}
# Heterogeneous CartPole: mean wait s_i * (1 ms + 0.002 * 20 ms), s_i in [1, 4].
STRAGGLERS = [
    "habitat_baselines.embedded_env.straggler.enabled=True",
    "habitat_baselines.embedded_env.straggler.speed_factor_min=1.0",
    "habitat_baselines.embedded_env.straggler.speed_factor_max=4.0",
    "habitat_baselines.embedded_env.straggler.base_step_seconds=0.001",
    "habitat_baselines.embedded_env.straggler.jitter=0.25",
    "habitat_baselines.embedded_env.straggler.long_step_prob=0.002",
    "habitat_baselines.embedded_env.straggler.long_step_seconds=0.02",
]


def seed_overrides(seed: int, stragglers: bool) -> List[str]:
    """One seed: the envs' and torch's (``habitat.seed``) and the waits' streams."""
    out = [f"habitat.seed={seed}"]
    if stragglers:
        out += STRAGGLERS + [f"habitat_baselines.embedded_env.straggler.seed={seed}"]
    return out


def mean_curve(curves: List[List[List[float]]], points: int = 50) -> List[List[float]]:
    """The mean of per-seed ``[[step, return], ...]`` curves on a common step grid.

    Each curve is linearly interpolated at ``points`` steps spread over the
    range every curve covers (from the largest first step to the smallest
    last one); empty when they share no range.
    """
    curves = [c for c in curves if c]
    if not curves:
        return []
    lo, hi = max(c[0][0] for c in curves), min(c[-1][0] for c in curves)
    if hi < lo:
        return []
    grid = [lo + (hi - lo) * i / max(points - 1, 1) for i in range(points)] if hi > lo else [lo]
    return [[x, sum(_interp(c, x) for c in curves) / len(curves)] for x in grid]


def _interp(curve: List[List[float]], x: float) -> float:
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return curve[-1][1] if x >= curve[-1][0] else curve[0][1]


def steps_to(curve: List[List[float]], threshold: float) -> Optional[float]:
    """The first logged step whose return is >= ``threshold`` (None: never)."""
    return next((step for step, value in curve if value >= threshold), None)


def run_seed(system: str, seed: int, args: argparse.Namespace) -> Dict[str, Any]:
    config, extra = SYSTEMS[system]
    overrides = [
        f"habitat_baselines.total_num_steps={args.steps}",
        "habitat_baselines.num_updates=-1",
        "habitat_baselines.progress.enabled=False",
        "habitat_baselines.log_interval=1",
        *seed_overrides(seed, not args.no_stragglers),
        *extra,
    ]
    result = trainer_sps.run_variant(config, overrides, keep_curve=True)
    if "reward_curve" in result:
        curve = result["reward_curve"]
        tail = [v for _, v in curve[-max(1, len(curve) // 10) :]]
        result["final_return"] = sum(tail) / len(tail) if tail else None
        result["steps_to_threshold"] = steps_to(curve, args.threshold)
    return result


def finished_runs(out: Path, args: argparse.Namespace) -> Dict[Tuple[str, str], Any]:
    """``(system, seed) -> run`` of the runs in ``out`` that did not fail, when
    ``out`` was written with this run's steps, threshold and envs; else none."""
    if not out.exists():
        return {}
    previous = json.loads(out.read_text())
    same = (previous.get("steps"), previous.get("threshold"), previous.get("stragglers")) == (
        args.steps,
        args.threshold,
        not args.no_stragglers,
    )
    if not same:
        print(f"--resume: {out} is of other settings; running everything")
        return {}
    return {
        (system, seed): run
        for system, entry in previous.get("systems", {}).items()
        for seed, run in entry.get("seeds", {}).items()
        if "error" not in run
    }


def plot(report: Dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 5), tight_layout=True)
    axis = figure.subplots()
    for index, (system, entry) in enumerate(report["systems"].items()):
        color = f"C{index}"
        for run in entry["seeds"].values():
            curve = run.get("reward_curve") or []
            axis.plot([p[0] for p in curve], [p[1] for p in curve], color=color, lw=0.7, alpha=0.4)
        mean = entry.get("mean_curve") or []
        axis.plot([p[0] for p in mean], [p[1] for p in mean], color=color, lw=2.5, label=system)
    axis.axhline(report["threshold"], color="k", ls=":", lw=0.8)
    axis.set_xlabel("environment steps")
    axis.set_ylabel("mean episode return (reward window)")
    seeds = len(report["seeds"])
    plural = "s" if seeds != 1 else ""
    axis.set_title(
        f"CartPole-v1{' + stragglers' if report['stragglers'] else ''}, {seeds} seed{plural}"
    )
    axis.legend()
    partial = path.with_suffix(".tmp.png")
    figure.savefig(partial)
    partial.replace(path)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    parser.add_argument("--seeds", type=int, default=3, help="seeds 1..N per system")
    parser.add_argument("--steps", type=int, default=300000, help="env steps per run")
    parser.add_argument("--threshold", type=float, default=400.0, help="return to reach")
    parser.add_argument("--no-stragglers", action="store_true", help="plain CartPole")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/sample_efficiency.json"))
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the runs --out already holds (same steps, threshold and envs) "
        "that did not fail; run only the others",
    )
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = finished_runs(out, args) if args.resume else {}
    report: Dict[str, Any] = dict(
        git_sha=sps_report.git_sha(),
        cpus=os.cpu_count(),
        steps=args.steps,
        seeds=list(range(1, args.seeds + 1)),
        threshold=args.threshold,
        stragglers=not args.no_stragglers,
        load_before=os.getloadavg(),
        systems={},
    )
    for system in args.systems:
        entry: Dict[str, Any] = dict(config=SYSTEMS[system][0], seeds={})
        report["systems"][system] = entry
        for seed in report["seeds"]:
            run = done.get((system, str(seed)))
            if run is not None:
                print(f"{system} seed {seed}: kept from {out}")
            else:
                print(f"[{time.strftime('%H:%M:%S')}] {system} seed {seed} ...", flush=True)
                run = run_seed(system, seed, args)
            entry["seeds"][str(seed)] = run
            if "error" in run:
                print(f"  failed: {run['error']}")
            else:
                print(
                    f"  final return {sps_report._fmt(run['final_return'], '.1f')}, "
                    f"steady {run['steady_sps']:.0f} steps/s"
                )
            curves = [r.get("reward_curve") or [] for r in entry["seeds"].values()]
            entry["mean_curve"] = mean_curve(curves)
            trainer_sps.write_report(report, out)
    report["load_after"] = os.getloadavg()
    trainer_sps.write_report(report, out)
    print(f"json: {out}")
    plot(report, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
