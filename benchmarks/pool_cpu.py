"""CPU per env step of the env pools themselves: no policy, no learner (not a test).

Steps the same envs through the ``lockstep`` pool (habitat's ``VectorEnv``:
``ddppo``'s and evaluation's) and the ``per_env`` pool (VER's), in rounds of
"every env steps, then wait for all" with random actions, and reports per pool
the CPU milliseconds per env step of this process (the trainer's side of the
pool) and of the env workers (their own children, ViZDoom's engine, included),
read from ``/proc`` (``process_cpu``).  Both pools do the same env work, so
what one spends above the other is its own cost: this is how the per-step
torch calls of VER's env workers and the trainer's intra-op threads spinning
after each gather were found (docs/BENCHMARKS.md, "Where the CPU goes").

    .venv/bin/python benchmarks/pool_cpu.py --config doom/ddppo_my_way_home --envs 16

The pools alternate (``--repeats`` times each) so that a change of load hits
both; this process runs torch on ``--trainer-threads`` threads (1: as trainers
collect, under ``force_torch_single_threaded``).  Writes JSON with ``--out``.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

# The benchmarks folder is not a package: its sibling modules are found by path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import process_cpu

from habitat_ver.common.atomic import write_atomically

POOLS = ("lockstep", "per_env")


def _lockstep(config: Any) -> Any:
    """Upstream's loop's pool, built as ``ddppo`` builds it; a round steps all."""
    import torch

    from habitat_ver.envs.factory import VerVectorEnvFactory

    envs = VerVectorEnvFactory().construct_envs(config)
    envs.reset()
    actions = envs.action_spaces[0].n
    num = envs.num_envs

    def round_() -> None:
        envs.step(torch.randint(actions, (num,)).tolist())

    return envs, round_


def _per_env(config: Any) -> Any:
    """VER's pool; a round sends every env its action, then reads each result
    as the collector does."""
    import torch

    from habitat_ver.envs.pools import per_env_pool, pool_setup

    envs = per_env_pool(pool_setup(config))
    envs.reset()
    actions = envs.action_space.n
    ids = torch.arange(envs.num_envs)

    def round_() -> None:
        envs.send_actions(ids, torch.randint(actions, (len(ids), 1)))
        left = len(ids)
        while left:
            ready = envs.wait_ready(len(ids))
            envs.read(torch.tensor(ready))
            left -= len(ready)

    return envs, round_


BUILDERS: Dict[str, Callable[[Any], Any]] = {"lockstep": _lockstep, "per_env": _per_env}


def _by_kind(before: process_cpu.Snapshot, after: process_cpu.Snapshot) -> Dict[str, float]:
    """CPU-seconds spent between two snapshots, by kind (processes seen in both)."""
    spent: Dict[str, float] = {}
    for key, seconds in after.cpu.items():
        if key in before.cpu:
            spent[key[0]] = spent.get(key[0], 0.0) + seconds - before.cpu[key]
    return spent


def measure(pool: str, config: Any, rounds: int, warmup: int) -> Dict[str, float]:
    """One pool's CPU ms per env step, by kind, over ``rounds`` rounds."""
    envs, round_ = BUILDERS[pool](config)
    try:
        for _ in range(warmup):
            round_()
        before = process_cpu.take_snapshot(os.getpid())
        start = time.perf_counter()
        for _ in range(rounds):
            round_()
        wall = time.perf_counter() - start
        after = process_cpu.take_snapshot(os.getpid())
    finally:
        envs.close()
    steps = rounds * envs.num_envs
    spent = _by_kind(before, after)
    return {
        "steps_per_s": steps / wall,
        "trainer_ms": 1000.0 * spent.get(process_cpu.TRAINER, 0.0) / steps,
        "env_workers_ms": 1000.0 * spent.get(process_cpu.ENV_WORKERS, 0.0) / steps,
    }


def _median(values: List[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="doom/ddppo_my_way_home", help="a config name")
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=300, help="rounds measured per repeat")
    parser.add_argument("--warmup", type=int, default=20, help="rounds before measuring")
    parser.add_argument("--repeats", type=int, default=3, help="measurements of each pool")
    parser.add_argument("--pools", nargs="+", default=list(POOLS), choices=POOLS)
    parser.add_argument(
        "--trainer-threads", type=int, default=1, help="torch threads of this process"
    )
    parser.add_argument("--out", help="JSON file")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.envs < 1 or args.rounds < 1 or args.repeats < 1 or args.trainer_threads < 1:
        raise SystemExit("--envs, --rounds, --repeats and --trainer-threads must be positive")
    import torch

    from habitat_ver.config.compose import get_config

    torch.set_num_threads(args.trainer_threads)
    config = get_config(args.config, [f"habitat_baselines.num_environments={args.envs}"])
    runs: Dict[str, List[Dict[str, float]]] = {pool: [] for pool in args.pools}
    for repeat in range(args.repeats):
        for pool in args.pools:
            runs[pool].append(measure(pool, config, args.rounds, args.warmup))
            print(f"[{repeat + 1}/{args.repeats}] {pool}: {runs[pool][-1]}", flush=True)
    medians = {pool: {k: _median([r[k] for r in rs]) for k in rs[0]} for pool, rs in runs.items()}
    print(
        f"\n{args.config}, {args.envs} envs, {args.rounds} rounds x {args.repeats}, "
        f"trainer on {args.trainer_threads} thread(s); medians, CPU ms per env step:"
    )
    print(f"{'pool':<10} {'steps/s':>9} {'trainer':>9} {'env workers':>12} {'total':>8}")
    for pool, m in medians.items():
        total = m["trainer_ms"] + m["env_workers_ms"]
        print(
            f"{pool:<10} {m['steps_per_s']:>9.1f} {m['trainer_ms']:>9.3f} "
            f"{m['env_workers_ms']:>12.3f} {total:>8.3f}"
        )
    if args.out:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        report = {
            "git": sha,
            "machine": platform.node(),
            "cores": os.cpu_count(),
            "settings": vars(args),
            "runs": runs,
            "medians": medians,
        }
        text = json.dumps(report, indent=2).encode()
        write_atomically(args.out, lambda f: f.write(text))
        print(f"json: {args.out}")


if __name__ == "__main__":
    main()
