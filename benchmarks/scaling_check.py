"""Checks the scaling simulation against a real 2-rank CPU run (not a test).

Runs ``ver`` on 2 gloo ranks (torchrun) with rank 1's envs made stragglers,
once without cross-rank preemption (``distrib_preemption.policy=none``) and
once with VER's estimated optimal preemption (``policy=ver``), and reads each
run's mean steps/s from rank 0's log. Then it runs
``benchmarks/scaling_sim.py`` at R=2 with the same straggler settings, N, T,
and the given inference and learning times, and prints the simulated and the
measured ratio of the two side by side.

    .venv/bin/python benchmarks/scaling_check.py --updates 30 --slow-factor 20

The simulator drops VER's in-flight steps at each rollout start and models
inference as a fixed cost, so expect agreement on the direction and rough size
of the gain, not to the percent.
"""

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import scaling_sim  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def real_sps(args: argparse.Namespace, policy: str) -> float:
    """Mean steps/s of a 2-rank run (rank 0's last ``fps`` log line)."""
    s = "habitat_baselines.embedded_env.straggler"
    slow = ",".join(str(i) for i in range(args.envs_per_rank, 2 * args.envs_per_rank))
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node=2",
            f"--master_port={_free_port()}",
            "-m",
            "habitat_ver.run",
            f"--config-name={args.config}",
            f"habitat_baselines.num_environments={args.envs_per_rank}",
            f"habitat_baselines.rl.ppo.num_steps={args.num_steps}",
            "habitat_baselines.total_num_steps=-1",
            f"habitat_baselines.num_updates={args.updates}",
            f"habitat_baselines.checkpoint_folder={out}/ck",
            f"habitat_baselines.tensorboard_dir={out}/tb",
            f"habitat_baselines.log_file={out}/train.log",
            "habitat_baselines.progress.enabled=False",
            "habitat_baselines.log_interval=1",
            f"habitat_baselines.distrib_preemption.policy={policy}",
            f"{s}.enabled=True",
            f"{s}.base_step_seconds={args.base_step_seconds}",
            f"{s}.speed_factor_min=1.0",
            f"{s}.speed_factor_max=1.0",
            f"{s}.jitter=0.0",
            f"{s}.long_step_prob=0.0",
            f"{s}.slow_env_indices=[{slow}]",
            f"{s}.slow_factor={args.slow_factor}",
        ]
        env = dict(
            os.environ,
            MAIN_ADDR="127.0.0.1",
            MAIN_PORT=str(_free_port()),
            GLOO_SOCKET_IFNAME="lo",
            OMP_NUM_THREADS="1",
        )
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            raise RuntimeError(f"{policy}: the run failed:\n{done.stderr[-3000:]}")
        fps = re.findall(r"(?:system/sps|fps): ([0-9.]+)", done.stderr + done.stdout)
        return float(fps[-1])


def simulated(args: argparse.Namespace) -> dict:
    slow = ",".join(str(i) for i in range(args.envs_per_rank, 2 * args.envs_per_rank))
    sim_args = scaling_sim.parse_args(
        [
            "--ranks",
            "2",
            "--envs-per-rank",
            str(args.envs_per_rank),
            "--num-steps",
            str(args.num_steps),
            "--updates",
            str(args.updates),
            "--inference-seconds",
            str(args.inference_seconds),
            "--learn-time",
            str(args.learn_time),
            "--base-step-seconds",
            str(args.base_step_seconds),
            "--speed-factor-min",
            "1.0",
            "--speed-factor-max",
            "1.0",
            "--jitter",
            "0.0",
            "--long-step-prob",
            "0.0",
            "--slow-envs",
            slow,
            "--slow-factor",
            str(args.slow_factor),
        ]
    )
    model = scaling_sim.DelayModel(scaling_sim.straggler_config(sim_args), 2 * args.envs_per_rank)
    return scaling_sim.simulate_ranks(model, 2, sim_args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="gym/ver_cartpole")
    parser.add_argument("--envs-per-rank", type=int, default=4)
    parser.add_argument("--num-steps", type=int, default=32)
    parser.add_argument("--updates", type=int, default=30)
    parser.add_argument("--base-step-seconds", type=float, default=0.002)
    parser.add_argument("--slow-factor", type=float, default=20.0)
    parser.add_argument(
        "--inference-seconds",
        type=float,
        default=0.001,
        help="per step, for the simulator (CartPole's policy on this CPU)",
    )
    parser.add_argument(
        "--learn-time", type=float, default=0.05, help="LT in seconds, for the simulator"
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/scaling_check.json"))
    args = parser.parse_args()
    real = {policy: real_sps(args, policy) for policy in ("none", "ver")}
    sim = simulated(args)
    report = dict(
        args=vars(args),
        real=dict(real, ratio=real["ver"] / real["none"]),
        simulated=dict(ver=sim["ver"], ver_opt=sim["ver_opt"], ratio=sim["ver_opt"] / sim["ver"]),
    )
    print(f"{'':22s} {'no preemption':>14s} {'VER preemption':>15s} {'ratio':>7s}")
    print(
        f"{'real 2-rank run':22s} {real['none']:14.1f} {real['ver']:15.1f} "
        f"{report['real']['ratio']:6.2f}x"
    )
    print(
        f"{'simulation, R=2':22s} {sim['ver']:14.1f} {sim['ver_opt']:15.1f} "
        f"{report['simulated']['ratio']:6.2f}x"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
