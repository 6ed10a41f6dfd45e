"""Learning against env steps, per system and seed, on one task (not a test).

A speed-up that costs learning must show next to the speed.
Two tasks (``--task``):

* ``cartpole`` (default): return against steps for ddppo, ver, ver + overlap
  and appo on gym's CartPole-v1, each system with its config's recipe
  (``gym/ddppo_cartpole``, ``gym/ver_cartpole`` with and without
  ``overlap_rollouts_and_learn``, ``gym/appo_cartpole``), by default behind the
  straggler wrapper (speed factors 1-4x, so VER's variable experience and
  appo's asynchrony see envs of different speed, as on workload (c)).
* ``pointnav_blind``: success and SPL against steps for
  ddppo and ver on habitat-lab's PointNav in habitat-sim's simple_room (the
  real simulator), with the recipe of ``tests/sim/test_pointnav_learning.py``
  (0.5-1.5 m episodes, cameras removed, 4 envs, T=32; one set of overrides
  for both systems, whose configs differ only in trainer and storage), and
  the last checkpoint's success and SPL on the 20 val episodes
  (``benchmarks/pointnav_blind.py``).  Its dataset is generated into
  ``--data`` when missing.

Several seeds each.  Curves are read from each run's TensorBoard
(``benchmarks/run_logs.py``, the parser ``trainer_sps.py`` uses).  Writes JSON
(curves per system and seed, final values, steps to reach ``--threshold``,
steady steps/s) atomically and a PNG: the mean over seeds (thick) and every
seed (thin) per system, one panel per curve.

    # full: 4 systems x 3 seeds x 300k steps (about 1 h on a quiet 2-core machine)
    .venv/bin/python benchmarks/sample_efficiency.py
    # reduced (shows it works): 1 seed, 20k steps
    .venv/bin/python benchmarks/sample_efficiency.py --seeds 1 --steps 20000
    # blind PointNav: 2 systems x 2 seeds x 19,200 steps (the real simulator)
    HABITAT_VER_SIM_FREE=0 .venv/bin/python benchmarks/sample_efficiency.py --task pointnav_blind
"""

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

# The benchmarks folder is not a package: its sibling modules are found by path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pointnav_blind
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


@dataclass(frozen=True)
class Metric:
    """One curve of a task, and where its numbers go in the JSON."""

    name: str  # run_logs' canonical series (run_logs.CURVES)
    final_key: str  # a run's final value (mean of the last 10% of points)
    mean_key: str  # a system's mean curve over seeds
    label: str  # y axis
    fmt: str  # format of its final value in the progress lines

    @property
    def curve_key(self) -> str:
        return f"{self.name}_curve"


@dataclass(frozen=True)
class Task:
    """A learnable workload: systems, curves (the first one's threshold) and defaults."""

    title: str
    systems: Dict[str, Tuple[str, List[str]]]
    metrics: Tuple[Metric, ...]
    steps: int  # env steps per run
    seeds: int
    threshold: float
    overrides: List[str]  # every system's, after the seed's
    stragglers: bool = False  # the embedded envs' straggler wrapper applies
    dataset: Tuple[str, ...] = ()  # generator options of a PointNav dataset (real sim)


TASKS = {
    "cartpole": Task(
        title="CartPole-v1",
        systems=SYSTEMS,
        metrics=(
            Metric(
                "reward", "final_return", "mean_curve", "mean episode return (reward window)", ".1f"
            ),
        ),
        steps=300000,
        seeds=3,
        threshold=400.0,
        overrides=[],
        stragglers=True,
    ),
    "pointnav_blind": Task(
        title="blind PointNav, simple_room, 0.5-1.5 m",
        systems=pointnav_blind.SYSTEMS,
        metrics=(
            Metric(
                "success", "final_success", "mean_success_curve", "success (reward window)", ".2f"
            ),
            Metric("spl", "final_spl", "mean_spl_curve", "SPL (reward window)", ".2f"),
        ),
        steps=150 * 4 * 32,  # the test's 150 updates
        seeds=2,
        threshold=0.8,
        overrides=pointnav_blind.OVERRIDES,
        dataset=pointnav_blind.DATASET,
    ),
}


def seed_overrides(seed: int, stragglers: bool) -> List[str]:
    """One seed: the envs' and torch's (``habitat.seed``) and the waits' streams."""
    out = [f"habitat.seed={seed}"]
    if stragglers:
        out += STRAGGLERS + [f"habitat_baselines.embedded_env.straggler.seed={seed}"]
    return out


def with_stragglers(args: argparse.Namespace) -> bool:
    """Whether this run's envs are behind the straggler wrapper."""
    return TASKS[args.task].stragglers and not args.no_stragglers


def task_overrides(args: argparse.Namespace) -> List[str]:
    """The task's recipe, and its dataset's paths where it has one."""
    task = TASKS[args.task]
    return task.overrides + (pointnav_blind.dataset_overrides(args.data) if task.dataset else [])


def mean_curve(curves: List[List[List[float]]], points: int = 50) -> List[List[float]]:
    """The mean of per-seed ``[[step, value], ...]`` curves on a common step grid.

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
    """The first logged step whose value is >= ``threshold`` (None: never)."""
    return next((step for step, value in curve if value >= threshold), None)


def final_value(curve: List[List[float]]) -> Optional[float]:
    """The mean value of the last 10% of a curve's points (at least one; None
    for an empty curve)."""
    tail = [v for _, v in curve[-max(1, len(curve) // 10) :]]
    return sum(tail) / len(tail) if tail else None


def run_seed(system: str, seed: int, args: argparse.Namespace) -> Dict[str, Any]:
    task = TASKS[args.task]
    config, extra = task.systems[system]
    overrides = [
        f"habitat_baselines.total_num_steps={args.steps}",
        "habitat_baselines.num_updates=-1",
        "habitat_baselines.progress.enabled=False",
        "habitat_baselines.log_interval=1",
        *seed_overrides(seed, with_stragglers(args)),
        *task_overrides(args),
        *extra,
    ]
    then = (
        pointnav_blind.evaluation(config, overrides) if task.dataset and not args.no_eval else None
    )
    result = trainer_sps.run_variant(config, overrides, keep_curve=True, then=then)
    for metric in task.metrics:
        if metric.curve_key in result:
            result[metric.final_key] = final_value(result[metric.curve_key])
    first = task.metrics[0].curve_key
    if first in result:
        result["steps_to_threshold"] = steps_to(result[first], args.threshold)
    return result


def finished_runs(out: Path, args: argparse.Namespace) -> Dict[Tuple[str, str], Any]:
    """``(system, seed) -> run`` of the runs in ``out`` that did not fail, when
    ``out`` was written with this run's task, steps, threshold and envs; else none."""
    if not out.exists():
        return {}
    previous = json.loads(out.read_text())
    settings = ("task", "steps", "threshold", "stragglers")
    # Files from before --task are CartPole's.
    same = tuple({"task": "cartpole", **previous}.get(k) for k in settings) == (
        args.task,
        args.steps,
        args.threshold,
        with_stragglers(args),
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

    task = TASKS[report.get("task", "cartpole")]
    figure = Figure(figsize=(8 + 4 * (len(task.metrics) - 1), 5), tight_layout=True)
    axes = figure.subplots(1, len(task.metrics), squeeze=False)[0]
    for axis, metric in zip(axes, task.metrics):
        for index, (system, entry) in enumerate(report["systems"].items()):
            color = f"C{index}"
            for run in entry["seeds"].values():
                curve = run.get(metric.curve_key) or []
                axis.plot(
                    [p[0] for p in curve], [p[1] for p in curve], color=color, lw=0.7, alpha=0.4
                )
            mean = entry.get(metric.mean_key) or []
            axis.plot([p[0] for p in mean], [p[1] for p in mean], color=color, lw=2.5, label=system)
        axis.set_xlabel("environment steps")
        axis.set_ylabel(metric.label)
        axis.legend()
    axes[0].axhline(report["threshold"], color="k", ls=":", lw=0.8)
    seeds = len(report["seeds"])
    plural = "s" if seeds != 1 else ""
    figure.suptitle(
        f"{task.title}{' + stragglers' if report['stragglers'] else ''}, {seeds} seed{plural}"
    )
    partial = path.with_suffix(".tmp.png")
    figure.savefig(partial)
    partial.replace(path)
    print(f"plot: {path}")


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """The command line; the task's defaults fill what is not given."""
    systems = sorted({s for task in TASKS.values() for s in task.systems})
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="cartpole", choices=list(TASKS))
    parser.add_argument(
        "--systems", nargs="+", default=None, choices=systems, help="default: the task's"
    )
    parser.add_argument("--seeds", type=int, default=None, help="seeds 1..N per system")
    parser.add_argument("--steps", type=int, default=None, help="env steps per run")
    parser.add_argument("--threshold", type=float, default=None, help="first curve's to reach")
    parser.add_argument("--no-stragglers", action="store_true", help="plain CartPole")
    parser.add_argument(
        "--no-eval", action="store_true", help="pointnav: skip the val-split evaluation"
    )
    parser.add_argument(
        "--data",
        default=str(ROOT / "data/short_pointnav"),
        help="pointnav: data root of the task's dataset (generated there if missing)",
    )
    parser.add_argument(
        "--stages-dir",
        default=None,
        help="pointnav: habitat-sim's test stages (default: the generator's, ../shared/...)",
    )
    parser.add_argument("--out", default=None, help="JSON (default: benchmarks/results/...)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the runs --out already holds (same task, steps, threshold and envs) "
        "that did not fail; run only the others",
    )
    args = parser.parse_args(argv)
    task = TASKS[args.task]
    args.systems = args.systems or list(task.systems)
    unknown = [s for s in args.systems if s not in task.systems]
    if unknown:
        parser.error(f"--systems {unknown}: task {args.task} has {list(task.systems)}")
    args.seeds = task.seeds if args.seeds is None else args.seeds
    args.steps = task.steps if args.steps is None else args.steps
    args.threshold = task.threshold if args.threshold is None else args.threshold
    suffix = "" if args.task == "cartpole" else f"_{args.task}"
    args.out = args.out or str(ROOT / f"benchmarks/results/sample_efficiency{suffix}.json")
    return args


def prepare(args: argparse.Namespace) -> None:
    """A real-sim task: refuse forced sim-free mode, generate its dataset if missing."""
    task = TASKS[args.task]
    if not task.dataset:
        return
    from habitat_ver.compat.sim_free import FORCE_ENV_VAR

    if os.environ.get(FORCE_ENV_VAR) == "1":
        sys.exit(f"--task {args.task} runs the real simulator: set {FORCE_ENV_VAR}=0")
    trainer_sps.ensure_pointnav_dataset(args.stages_dir, Path(args.data), task.dataset)


def _summary(run: Dict[str, Any], task: Task) -> str:
    finals = ", ".join(
        f"{m.final_key.replace('_', ' ')} {sps_report._fmt(run.get(m.final_key), m.fmt)}"
        for m in task.metrics
    )
    evaluated = run.get("eval", {})
    if "success" in evaluated:
        finals += f", val success {evaluated['success']:.2f} SPL {evaluated['spl']:.2f}"
    cpu = sps_report.cpu_line(run.get("cpu"))
    return f"  {finals}, steady {run['steady_sps']:.0f} steps/s\n  {cpu}"


def main() -> None:
    args = parse_args()
    task = TASKS[args.task]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    prepare(args)
    done = finished_runs(out, args) if args.resume else {}
    report: Dict[str, Any] = dict(
        git_sha=sps_report.git_sha(),
        cpus=os.cpu_count(),
        task=args.task,
        steps=args.steps,
        seeds=list(range(1, args.seeds + 1)),
        threshold=args.threshold,
        stragglers=with_stragglers(args),
        overrides=task_overrides(args),
        load_before=os.getloadavg(),
        started=time.strftime("%Y-%m-%d %H:%M:%S"),
        systems={},
    )
    for system in args.systems:
        entry: Dict[str, Any] = dict(config=task.systems[system][0], seeds={})
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
                print(_summary(run, task), flush=True)
            for metric in task.metrics:
                curves = [r.get(metric.curve_key) or [] for r in entry["seeds"].values()]
                entry[metric.mean_key] = mean_curve(curves)
            sps_report.write_json(report, out)
    report["load_after"] = os.getloadavg()
    sps_report.write_json(report, out)
    print(f"json: {out}")
    plot(report, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
