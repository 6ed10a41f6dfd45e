"""Simulated multi-rank scaling of SyncOnRL, DD-PPO preemption, VER and VER + preemption.

R ranks of N envs each; every env's step times are drawn from the straggler
model of :class:`habitat_ver.envs.straggler.StepDelaySampler` (per-env speed
factor, mean-1 log-normal jitter, rare long steps) plus a fixed inference cost
per step; every update adds a fixed learning time LT.  Per update:

* ``sync``: SyncOnRL without preemption.  A rank's N envs step in lock-step
  (each step waits for the rank's slowest env), T steps; the update waits for
  the slowest rank.
* ``ddppo``: the same lock-step ranks preempted by DD-PPO's rule
  (:func:`dd_ppo_should_preempt`: stop once ``sync_frac`` of the ranks
  finished, never before T/4), checked after every step of every rank.
* ``ver``: VER inside each rank (T*N steps from whichever envs are fastest),
  no cross-rank preemption: the update waits for the slowest rank.
* ``ver_opt``: VER plus the estimated optimal preemption
  (:func:`optimal_preemption_steps`), planned from the previous update's mean
  per-env step time of each rank; collection stops once S steps arrived
  across all ranks.  The first update has no estimate and collects everything.

Steps/s count fresh steps only (stale fill adds none).  Simplifications: each
update starts with every env idle (VER's in-flight steps carried to the next
rollout are dropped), and learning time does not depend on the method.

Usage: ``python benchmarks/scaling_sim.py [--out PATH] [--slow-envs 0,1 ...]``
"""

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from typing import Dict, List

import numpy as np

from habitat_ver.config.embedded_env import StragglerConfig
from habitat_ver.distributed.preemption import dd_ppo_should_preempt
from habitat_ver.distributed.ver_preemption import optimal_preemption_steps
from habitat_ver.envs.straggler import StepDelaySampler

METHODS = ("sync", "ddppo", "ver", "ver_opt")


def parse_args(argv: List[str]) -> argparse.Namespace:
    defaults = StragglerConfig()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="1,2,4,8,16,32,64,128,256")
    parser.add_argument("--envs-per-rank", type=int, default=16)
    parser.add_argument("--num-steps", type=int, default=128, help="T per env")
    parser.add_argument("--inference-seconds", type=float, default=0.001)
    parser.add_argument("--learn-time", type=float, default=0.5, help="LT, seconds")
    parser.add_argument("--updates", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=1, help="updates not measured")
    parser.add_argument("--sync-frac", type=float, default=0.6)
    for field in (
        "speed_factor_min",
        "speed_factor_max",
        "base_step_seconds",
        "jitter",
        "long_step_prob",
        "long_step_seconds",
        "slow_factor",
    ):
        parser.add_argument(
            "--" + field.replace("_", "-"), type=float, default=getattr(defaults, field)
        )
    parser.add_argument("--slow-envs", default="", help="global env indices, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out",
        default=os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "results", "scaling_sim.json"
        ),
    )
    args = parser.parse_args(argv)
    if args.warmup >= args.updates:
        parser.error(f"--warmup={args.warmup} must be < --updates={args.updates}")
    return args


def straggler_config(args: argparse.Namespace) -> StragglerConfig:
    slow = [int(i) for i in args.slow_envs.split(",") if i.strip()]
    return StragglerConfig(
        enabled=True,
        speed_factor_min=args.speed_factor_min,
        speed_factor_max=args.speed_factor_max,
        base_step_seconds=args.base_step_seconds,
        jitter=args.jitter,
        long_step_prob=args.long_step_prob,
        long_step_seconds=args.long_step_seconds,
        slow_env_indices=slow,
        slow_factor=args.slow_factor,
        seed=args.seed,
    )


class DelayModel:
    """Vectorised draws of :meth:`StepDelaySampler.next_delay` for many envs.

    The speed factors come from the samplers themselves; the per-step draws
    follow the same formula in bulk (one sampler call per step would take
    minutes at 4096 envs).
    """

    def __init__(self, config: StragglerConfig, num_envs: int):
        self.config = config
        self.speed = np.array([StepDelaySampler(config, i).speed_factor for i in range(num_envs)])

    def draw(self, rng: np.random.Generator, num_envs: int, steps: int) -> np.ndarray:
        """Waits after ``steps`` steps of envs ``0..num_envs-1``; shape [E, steps]."""
        cfg = self.config
        sigma = cfg.jitter
        jitter = rng.lognormal(-0.5 * sigma * sigma, sigma, size=(num_envs, steps))
        is_long = rng.random((num_envs, steps)) < cfg.long_step_prob
        delay = cfg.base_step_seconds * jitter + cfg.long_step_seconds * is_long
        return self.speed[:num_envs, None] * delay


def simulate_rollout(
    model: DelayModel, rng, ranks: int, envs: int, steps: int, inference: float
) -> Dict[str, np.ndarray]:
    """One rollout of every rank: lock-step and asynchronous step arrival times.

    Returns:
        ``lockstep`` [R, T]: time a lock-stepped rank completes each step;
        ``arrivals`` [R, T*N]: sorted times of a VER rank's first T*N steps;
        ``step_time`` [R]: mean per-env step time of those steps (VER's
        estimate input: simulation plus inference).
    """
    budget = steps * envs
    width = 2 * steps
    step = model.draw(rng, ranks * envs, width).reshape(ranks, envs, width) + inference
    while True:
        done = np.cumsum(step, axis=2)
        flat = done.reshape(ranks, envs * width)
        kth = np.partition(flat, budget - 1, axis=1)[:, budget - 1]
        # Valid once every env was simulated past the rank's T*N-th arrival.
        if np.all(kth <= done[:, :, -1].min(axis=1)):
            break
        more = model.draw(rng, ranks * envs, width).reshape(ranks, envs, width)
        step = np.concatenate([step, more + inference], axis=2)
        width *= 2
    taken = flat <= kth[:, None]
    step_time = (step.reshape(ranks, -1) * taken).sum(axis=1) / taken.sum(axis=1)
    arrivals = np.sort(np.partition(flat, budget - 1, axis=1)[:, :budget], axis=1)
    lockstep = np.cumsum(step[:, :, :steps].max(axis=1), axis=1)
    return {"lockstep": lockstep, "arrivals": arrivals, "step_time": step_time}


def ddppo_rank_steps(lockstep: np.ndarray, sync_frac: float) -> np.ndarray:
    """Steps each lock-stepped rank collects under DD-PPO preemption.

    Rank r, after its k-th step (at ``lockstep[r, k-1]``), asks
    :func:`dd_ppo_should_preempt` with the number of ranks that finished all T
    steps by then.  The answer only turns from False to True as k grows, so a
    binary search finds the first k.
    """
    ranks, steps = lockstep.shape
    finished = np.sort(lockstep[:, -1])

    def preempt(rank: int, k: int) -> bool:
        num_done = int(np.searchsorted(finished, lockstep[rank, k - 1], side="right"))
        return dd_ppo_should_preempt(k, steps, num_done, ranks, sync_frac)

    collected = np.full(ranks, steps)
    for rank in range(ranks):
        low, high = 1, steps  # the first k with preempt() True lies in [low, high]
        if not preempt(rank, high):
            continue
        while low < high:
            mid = (low + high) // 2
            if preempt(rank, mid):
                high = mid
            else:
                low = mid + 1
        collected[rank] = low
    return collected


def run_update(rollout, plan_steps: int, args) -> Dict[str, tuple]:
    """(fresh steps, seconds) of one update for every method."""
    lockstep, arrivals = rollout["lockstep"], rollout["arrivals"]
    ranks, steps = lockstep.shape
    envs, lt = args.envs_per_rank, args.learn_time
    full = ranks * steps * envs
    ddppo = ddppo_rank_steps(lockstep, args.sync_frac)
    ddppo_time = lockstep[np.arange(ranks), ddppo - 1].max()
    # VER + preemption stops once S steps arrived across all ranks (each rank
    # at most its T*N buffer): the S-th arrival overall.
    stop = np.partition(arrivals.ravel(), plan_steps - 1)[plan_steps - 1]
    return {
        "sync": (full, lockstep[:, -1].max() + lt),
        "ddppo": (int(ddppo.sum()) * envs, ddppo_time + lt),
        "ver": (full, arrivals[:, -1].max() + lt),
        "ver_opt": (plan_steps, stop + lt),
    }


def simulate_ranks(model: DelayModel, ranks: int, args) -> Dict[str, float]:
    """Steps/s of every method with ``ranks`` ranks over the measured updates."""
    rng = np.random.default_rng([args.seed, ranks])
    envs, steps = args.envs_per_rank, args.num_steps
    totals = {m: [0, 0.0] for m in METHODS}
    estimate = None
    fractions = {"ddppo": [], "ver_opt": []}
    for update in range(args.updates):
        rollout = simulate_rollout(model, rng, ranks, envs, steps, args.inference_seconds)
        plan_steps = ranks * steps * envs
        if estimate is not None:  # no estimate before the first rollout
            plan_steps = optimal_preemption_steps(estimate, envs, steps, args.learn_time).steps
        estimate = rollout["step_time"].tolist()
        if update < args.warmup:
            continue
        for method, (collected, seconds) in run_update(rollout, plan_steps, args).items():
            totals[method][0] += collected
            totals[method][1] += seconds
            if method in fractions:
                fractions[method].append(collected / (ranks * steps * envs))
    row = {"ranks": ranks}
    row.update({m: totals[m][0] / totals[m][1] for m in METHODS})
    row.update({f"{m}_fresh_fraction": float(np.mean(v)) for m, v in fractions.items()})
    return row


def git_sha() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=here, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def print_table(rows: List[Dict[str, float]]) -> None:
    header = (
        f"{'R':>4} {'sync':>9} {'ddppo':>9} {'ver':>9} {'ver_opt':>9} "
        f"{'ddppo_fresh':>11} {'opt_fresh':>9} {'opt/ddppo':>9}"
    )
    print(header)
    for row in rows:
        print(
            f"{row['ranks']:>4} {row['sync']:>9.0f} {row['ddppo']:>9.0f} "
            f"{row['ver']:>9.0f} {row['ver_opt']:>9.0f} "
            f"{row['ddppo_fresh_fraction']:>11.3f} {row['ver_opt_fresh_fraction']:>9.3f} "
            f"{row['ver_opt'] / row['ddppo']:>9.2f}"
        )


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    config = straggler_config(args)
    rank_counts = [int(r) for r in args.ranks.split(",")]
    model = DelayModel(config, max(rank_counts) * args.envs_per_rank)
    start = time.perf_counter()
    rows = [simulate_ranks(model, ranks, args) for ranks in rank_counts]
    elapsed = time.perf_counter() - start
    print_table(rows)
    print(f"(steps/s of fresh experience; fresh = steps / (R*T*N); sweep {elapsed:.1f} s)")
    result = {
        "git_sha": git_sha(),
        "args": vars(args),
        "straggler": dataclasses.asdict(config),
        "sweep_seconds": elapsed,
        "rows": rows,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=2)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
