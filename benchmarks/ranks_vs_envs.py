"""What distribution costs on this machine: 1 rank x 4 envs against 2 ranks x 2 envs (not a test).

The same 4 envs, the same batch (4 envs x T steps per update) and the same
step budget, with the ``ver`` trainer, first as one process
(``python -m habitat_baselines.run``), then as two torchrun ranks of 2 envs
each (``torchrun --standalone --nproc_per_node 2``, GLOO), on two workloads:
PointNav on the generated simple_room data (``pointnav/ver_simple_room``,
made first if missing, as ``trainer_sps.py`` does) and the pick skill in its
CPU profile (``rearrange/ver_pick_nonav hab_data=generated hab_profile=cpu``;
needs make_hab_dataset's data, docs/HAB.md).  On 2 cores a second rank
cannot add compute; what it adds is a process, a gradient all-reduce per
update and inference split into two smaller batches.

Per run: steady steps/s of all ranks together (rank 0's step counter is the
sum over ranks, from the second logged update to the one before the last:
``benchmarks/run_logs.py``), CPU ms per env step over that window by kind of
process (``benchmarks/process_cpu.py``; the ranks are the trainer, torchrun's
agent counts as other) and the run's wall time, start-up included.

    python -m benchmarks run ranks_vs_envs
    .venv/bin/python benchmarks/ranks_vs_envs.py --workloads pick --updates 3 --out /tmp/r.json

Writes JSON (git SHA, machine, load before and after, settings, one entry per
workload and layout) atomically after every run.
"""

import argparse
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

# The benchmarks folder is not a package: its sibling modules are found by path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import process_cpu
import run_logs
import sps_report
import trainer_sps

from habitat_ver.compat.sim_free import FORCE_ENV_VAR
from habitat_ver.system.spare_cores import children_of

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Task:
    """One workload: its config, rollout length T and overrides."""

    config: str
    num_steps: int  # T, the config's own
    overrides: Tuple[str, ...] = ()


TASKS = {
    "pointnav": Task("pointnav/ver_simple_room", 64),
    "pick": Task("rearrange/ver_pick_nonav", 128, ("hab_data=generated", "hab_profile=cpu")),
}
# layout name -> (ranks, envs per rank): 4 envs in all either way.
LAYOUTS = {"1x4": (1, 4), "2x2": (2, 2)}
ENVS = 4


def system_name(task: str, layout: str) -> str:
    """A record's system: ``pointnav/2x2``."""
    return f"{task}/{layout}"


def budget(task: Task, updates: int) -> int:
    """Env steps of ``updates`` full updates of every layout's 4 envs x T."""
    return updates * ENVS * task.num_steps


def overrides(task: Task, envs_per_rank: int, steps: int, out: Path) -> List[str]:
    """The Hydra overrides of one run; its outputs go into ``out``."""
    return [
        *task.overrides,
        f"habitat_baselines.num_environments={envs_per_rank}",
        f"habitat_baselines.rl.ppo.num_steps={task.num_steps}",
        f"habitat_baselines.total_num_steps={steps}",
        "habitat_baselines.num_updates=-1",
        "habitat_baselines.num_checkpoints=1",
        "habitat_baselines.log_interval=1",
        "habitat_baselines.progress.enabled=False",
        f"habitat_baselines.checkpoint_folder={out}/ck",
        f"habitat_baselines.tensorboard_dir={out}/tb",
        f"habitat_baselines.log_file={out}/train.log",
    ]


def command(task: Task, ranks: int, envs_per_rank: int, steps: int, out: Path) -> List[str]:
    """The user's command: habitat_baselines.run alone, or under torchrun."""
    launcher = [sys.executable]
    if ranks > 1:
        launcher += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}"]
    run = ["-m", "habitat_baselines.run", f"--config-name={task.config}"]
    return launcher + run + overrides(task, envs_per_rank, steps, out)


def run_env(port: int) -> Dict[str, str]:
    """The runs' environment: the real habitat-sim, GLOO on the loopback."""
    env = {k: v for k, v in os.environ.items() if k != FORCE_ENV_VAR}
    env.update(MAIN_PORT=str(port), GLOO_SOCKET_IFNAME="lo", PYTHONWARNINGS="ignore")
    return env


def rank_processes(pid: int) -> Set[int]:
    """The processes ``pid`` started that run habitat_baselines.run
    (torchrun's ranks; empty once it is gone)."""
    return {child for child in children_of(pid) if _runs_trainer(child)}


def _runs_trainer(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"habitat_baselines.run" in f.read()
    except OSError:
        return False


def as_ranks(
    snapshots: List[process_cpu.Snapshot], agent: int, ranks: Iterable[int]
) -> List[process_cpu.Snapshot]:
    """A torchrun run's snapshots with its rank processes as the trainer and
    the agent itself as other (the sampler's root is the agent, whose unnamed
    children would be other)."""
    ranks = set(ranks)

    def kind(key: Tuple[str, int]) -> Tuple[str, int]:
        if key[1] in ranks:
            return (process_cpu.TRAINER, key[1])
        if key == (process_cpu.TRAINER, agent):
            return ("other", agent)
        return key

    return [
        process_cpu.Snapshot(
            s.wall, {kind(k): v for k, v in s.cpu.items()}, s.machine_busy, s.machine_total
        )
        for s in snapshots
    ]


def sampled(
    cmd: List[str], env: Dict[str, str], log: Path
) -> Tuple[int, process_cpu.ProcessSampler, Set[int]]:
    """Run ``cmd`` from the repository root in a process group of its own
    (killed whole when it ends), its output into ``log``, its CPU sampled.

    Returns:
        The exit status, the :class:`process_cpu.ProcessSampler` and the
        processes the root started (torchrun's ranks).
    """
    with open(log, "w") as out:
        process = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env, start_new_session=True
        )
    started: Set[int] = set()
    try:
        with process_cpu.ProcessSampler(process.pid) as sampler:
            while process.poll() is None:
                started |= rank_processes(process.pid)
                time.sleep(0.5)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:  # nothing of the run is left
            pass
    return process.wait(), sampler, started


def run_layout(task: Task, layout: str, updates: int) -> Dict[str, Any]:
    """One run of ``task`` in ``layout``: its steady rate, CPU per step by
    kind, wall time and learner threads, or ``{"error": [last lines]}``."""
    ranks, per_rank = LAYOUTS[layout]
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        cmd = command(task, ranks, per_rank, budget(task, updates), out)
        start = time.monotonic()
        code, sampler, started = sampled(cmd, run_env(free_port()), out / "console")
        wall = time.monotonic() - start
        console = (out / "console").read_text(errors="replace")
        if code != 0:
            return {"error": console.strip().splitlines()[-3:], "wall_s": wall}
        try:
            series = run_logs.read_run(str(out / "tb"))
            summary = run_logs.summarize(without_last_update(series))
            snapshots = sampler.snapshots
            if ranks > 1:
                snapshots = as_ranks(snapshots, sampler.root, started)
            cpu = process_cpu.window_costs(snapshots, *summary["steady_window"])
        except ValueError as error:
            return {"error": [str(error)], "wall_s": wall}
    kept = ("steady_sps", "steady_window", "steps_per_update", "update_s", "learner_threads")
    result = {k: summary[k] for k in kept}
    result["steps"] = series["sps"][1][-1][0]
    return {**result, "ranks": ranks, "envs_per_rank": per_rank, "cpu": cpu, "wall_s": wall}


def without_last_update(series: run_logs.Series) -> run_logs.Series:
    """``series`` without its last logged update (where it has three or more),
    for every layout alike: a rank that finished its last update closes its
    env workers while rank 0 still logs it, which would read as a lost worker."""
    tag, points = series["sps"]
    return {**series, "sps": (tag, points[:-1])} if len(points) > 2 else series


def free_port() -> int:
    """A TCP port free now, for habitat's store of the ranks (``MAIN_PORT``)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=list(LAYOUTS))
    parser.add_argument(
        "--updates", type=int, default=5, help="step budget: this many updates of 4 envs x T"
    )
    parser.add_argument(
        "--stages-dir", default=None, help="habitat-sim's test stages, for the pointnav dataset"
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/ranks_vs_envs.json"))
    return parser.parse_args(argv)


def main() -> None:
    # A stop (timeout, kill) ends the running layout's processes too (sampled).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    args = parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report: Dict[str, Any] = dict(
        benchmark="ranks_vs_envs",
        git_sha=sps_report.git_sha(),
        machine=platform.platform(),
        cpus=os.cpu_count(),
        settings=dict(updates=args.updates, envs=ENVS, layouts=args.layouts),
        load_before=os.getloadavg(),
        started=time.strftime("%Y-%m-%d %H:%M:%S"),
        tasks={},
        runs={},
    )
    for name in args.workloads:
        task = TASKS[name]
        if name == "pointnav":
            trainer_sps.ensure_pointnav_dataset(args.stages_dir)
        report["tasks"][name] = dict(
            config=task.config,
            overrides=list(task.overrides),
            num_steps=task.num_steps,
            steps=budget(task, args.updates),
        )
        for layout in args.layouts:
            print(f"[{time.strftime('%H:%M:%S')}] {name}: {layout} ...", flush=True)
            result = run_layout(task, layout, args.updates)
            report["runs"][system_name(name, layout)] = result
            print(f"  {summary_line(result)}", flush=True)
            sps_report.write_json(report, out)
    report["load_after"] = os.getloadavg()
    report["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    sps_report.write_json(report, out)
    print(f"load average: before {report['load_before']}, after {report['load_after']}")
    print(f"json: {out}")


def summary_line(result: Dict[str, Any]) -> str:
    if "error" in result:
        return f"failed after {result['wall_s']:.0f} s: {result['error']}"
    cpu = result["cpu"]["ms_per_step"]
    return (
        f"{result['steady_sps']:.1f} steps/s, CPU ms/step trainer "
        f"{cpu.get('trainer', 0.0):.2f} env workers {cpu.get('env_workers', 0.0):.2f}, "
        f"wall {result['wall_s']:.0f} s"
    )


if __name__ == "__main__":
    main()
