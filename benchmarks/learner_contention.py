"""Defaults under contention: learner threads and appo's layout, quiet and loaded (not a test).

Runs workload (c) (``doom/ddppo_wait_bound``: 16 Doom envs
behind wait-bound stragglers, T = 64, 2 epochs) a few updates per system, first
on the machine as it is ("quiet") and then beside a *neighbour*: another
process doing torch matmuls on 2 threads, as a second run's learner would
(started here, killed after its phase).  Per system and phase: steady steps/s,
per-update learning seconds (``system/learn_seconds``) and the threads each
update learnt on (``system/learner_threads``), and the load average.

Systems: ``ver`` with ``habitat_baselines.learner.num_threads`` 1, 2 (the old
default: every core of this process's share) and ``auto`` (the default);
``appo`` with no layout overrides (``rl.appo.num_rollout_workers`` and
``num_env_groups`` ``auto``) and with the best hand-set layout (one rollout
worker per env, one group: ``trainer_sps.py``'s), optionally the old default
(2 workers x 8 envs in 2 groups; slow, ``--old-appo``).

    .venv/bin/python benchmarks/learner_contention.py --steps 6144 --repeats 2 \\
        --out /tmp/contention.json
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run_logs

ROOT = Path(__file__).resolve().parents[1]
CONFIG = "doom/ddppo_wait_bound"
ENVS = 16
_VER = ["habitat_baselines.trainer_name=ver", "habitat_baselines.rollout_storage_name=VERStorage"]
SYSTEMS: Dict[str, List[str]] = {
    "ver_threads_1": _VER + ["habitat_baselines.learner.num_threads=1"],
    "ver_threads_2": _VER + ["habitat_baselines.learner.num_threads=2"],
    "ver_auto": _VER,
    "appo_default": ["habitat_baselines.trainer_name=appo"],
    "appo_per_env": [
        "habitat_baselines.trainer_name=appo",
        f"habitat_baselines.rl.appo.num_rollout_workers={ENVS}",
        "habitat_baselines.rl.appo.num_env_groups=1",
        f"habitat_baselines.rl.appo.batch_trajectories={ENVS}",
    ],
}
OLD_APPO = [
    "habitat_baselines.trainer_name=appo",
    "habitat_baselines.rl.appo.num_rollout_workers=2",
    "habitat_baselines.rl.appo.num_env_groups=2",
]
# The neighbour: a second run's learner, multi-threaded torch on this machine's cores.
NEIGHBOUR = "import torch; torch.set_num_threads(2); a = torch.randn(1500, 1500)\nwhile True: a @ a"


def scalars(tb_dir: str, tag: str) -> List[float]:
    """Every value of ``tag`` in the run's TensorBoard, in step order."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(tb_dir, purge_orphaned_data=False)
    events.Reload()
    if tag not in events.Tags().get("scalars", []):
        return []
    return [event.value for event in sorted(events.Scalars(tag), key=lambda e: e.step)]


def run_system(overrides: List[str], steps: int) -> Dict[str, Any]:
    """One short run of workload (c): steady steps/s, learning seconds and threads."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "habitat_ver.run",
            f"--config-name={CONFIG}",
            f"habitat_baselines.checkpoint_folder={out}/ck",
            f"habitat_baselines.tensorboard_dir={out}/tb",
            f"habitat_baselines.log_file={out}/train.log",
            f"habitat_baselines.total_num_steps={steps}",
            "habitat_baselines.num_updates=-1",
            "habitat_baselines.progress.enabled=False",
            "habitat_baselines.log_interval=1",
            *overrides,
        ]
        load_before = os.getloadavg()[0]
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.monotonic() - start
        result: Dict[str, Any] = dict(wall_s=wall, load_before=load_before)
        result["load_after"] = os.getloadavg()[0]
        if done.returncode != 0:
            return {**result, "error": done.stderr.strip().splitlines()[-3:]}
        summary = run_logs.summarize(run_logs.read_run(f"{out}/tb", done.stderr + done.stdout))
        result.update(
            steady_sps=summary["steady_sps"],
            learn_s=scalars(f"{out}/tb", "system/learn_seconds"),
            collect_s=scalars(f"{out}/tb", "system/collect_seconds"),
            learner_threads=scalars(f"{out}/tb", "system/learner_threads"),
            thread_log=[
                line.split("habitat_ver: ", 1)[1]
                for line in done.stderr.splitlines()
                if "learn on" in line or "update took" in line or "appo steps" in line
            ],
        )
        return result


def start_neighbour() -> subprocess.Popen:
    neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR])
    time.sleep(3.0)  # torch imported, matmuls running
    return neighbour


def stop_neighbour(neighbour: Optional[subprocess.Popen]) -> None:
    if neighbour is None:
        return
    neighbour.terminate()
    try:
        neighbour.wait(timeout=10)
    except subprocess.TimeoutExpired:
        neighbour.kill()
        neighbour.wait()


def describe(result: Dict[str, Any]) -> str:
    if "error" in result:
        return f"error: {result['error']}"
    learn = ", ".join(f"{s:.2f}" for s in result["learn_s"])
    threads = ",".join(str(int(t)) for t in result["learner_threads"])
    return (
        f"{result['steady_sps']:6.1f} steps/s  learn s [{learn}]  threads [{threads}]  "
        f"load {result['load_before']:.1f}->{result['load_after']:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6144, help="env steps per run (1024/update)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--systems", nargs="*", default=list(SYSTEMS), help="subset of systems")
    parser.add_argument("--phases", nargs="*", default=["quiet", "loaded"])
    parser.add_argument("--old-appo", action="store_true", help="also appo's old 2x8x2 layout")
    parser.add_argument("--out", type=Path, default=Path("learner_contention.json"))
    args = parser.parse_args()
    systems = {name: SYSTEMS[name] for name in args.systems}
    if args.old_appo:
        systems["appo_old_default"] = OLD_APPO
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    report: Dict[str, Any] = dict(
        sha=sha, machine=platform.node(), cores=os.cpu_count(), steps=args.steps, runs=[]
    )
    for repeat in range(args.repeats):
        for phase in args.phases:
            neighbour = start_neighbour() if phase == "loaded" else None
            try:
                for name, overrides in systems.items():
                    result = run_system(overrides, args.steps)
                    result.update(system=name, phase=phase, repeat=repeat)
                    report["runs"].append(result)
                    print(f"[{repeat}] {phase:6s} {name:16s} {describe(result)}", flush=True)
                    args.out.write_text(json.dumps(report, indent=1))
            finally:
                stop_neighbour(neighbour)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
