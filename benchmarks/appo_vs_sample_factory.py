"""Throughput and reward-vs-steps of our `appo` and `ver` against Sample Factory's APPO.

Same ViZDoom scenario (our ``DoomEnv``: My Way Home, 72x96 RGB, frame skip 4,
the same 9 actions), same number of envs, rollout workers and env groups,
same rollout length and batch, the same model shape (Sample Factory's
``convnet_atari`` is our CompactPolicy's CNN: 32 8x8/4, 64 4x4/2, 64 3x3/1;
then 256 FC and a GRU of 256), same number of env steps (agent steps; frames = 4x), one epoch per
batch.  Sample Factory runs with GAE, not V-trace: 2.1.1's learner crashes
with ``--with_vtrace=True`` (``_record_summaries`` reads
``mb.advantages``, which its V-trace path never sets), so it would hang.

Sample Factory runs from its own venv (see
benchmarks/requirements-sample-factory.txt) in a subprocess; it gets our
DoomEnv by file path, so the game, its settings and the resize are identical.

    python3.11 -m venv /tmp/sfvenv
    /tmp/sfvenv/bin/pip install -r benchmarks/requirements-sample-factory.txt
    .venv/bin/python benchmarks/appo_vs_sample_factory.py --sf-python /tmp/sfvenv/bin/python

SPS is measured between the first and the last progress report of each run
(start-up excluded) and, separately, over the whole run.  Writes
``--out`` (JSON, with git SHA, CPU count, settings) and prints a table.
Without ``--sf-python`` (or if Sample Factory fails) our side still runs and
the JSON says what failed.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import records

ROOT = Path(__file__).resolve().parents[1]
DOOM_PY = ROOT / "habitat_ver" / "envs" / "doom.py"

# ----------------------------------------------------------- Sample Factory side
# Run by the Sample Factory venv's python: `python this_file --sf-child ...`.


_DOOM_CLASS: Any = None
STRAGGLER_PY = ROOT / "habitat_ver" / "envs" / "straggler.py"
# gym id -> DoomEnv scenario (habitat_ver/envs/__init__.py's DOOM_IDS; that
# package imports habitat, which Sample Factory's venv lacks).
SCENARIOS = {
    "habitat_ver/DoomMyWayHome-v0": "my_way_home",
    "habitat_ver/DoomHealthGathering-v0": "health_gathering",
    "habitat_ver/DoomDefendTheCenter-v0": "defend_the_center",
    "habitat_ver/DoomDeathmatchBots-v0": "deathmatch_bots",
}


def _load(path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"habitat_ver_{path.stem}", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _our_doom_class() -> Any:
    """Our DoomEnv (gym 0.23 API, HWC dict obs), optionally in our straggler
    wrapper, as a gymnasium env with CHW observations, the layout Sample
    Factory's conv encoders take.  Built on first use, in Sample Factory's
    (spawned) processes only."""
    global _DOOM_CLASS
    if _DOOM_CLASS is not None:
        return _DOOM_CLASS
    from types import SimpleNamespace

    import gymnasium
    import numpy as np

    doom = _load(DOOM_PY)

    class OurDoom(gymnasium.Env):
        def __init__(
            self,
            seed: int,
            resolution: tuple,
            frame_skip: int,
            scenario: str = "my_way_home",
            straggler: Optional[Dict[str, Any]] = None,
            env_index: int = 0,
        ):
            self.env = doom.DoomEnv(scenario, resolution, frame_skip)
            self.env.seed(seed)
            if straggler:
                # The same wrapper, seed and env index as our trainers' env
                # `env_index`: the same speed factor and wait draws.
                wrapper = _load(STRAGGLER_PY).StragglerWrapper
                self.env = wrapper(self.env, SimpleNamespace(**straggler), env_index)
            self.observation_space = gymnasium.spaces.Box(0, 255, (3, *resolution), np.uint8)
            self.action_space = gymnasium.spaces.Discrete(len(doom.ACTIONS))

        def reset(self, seed=None, options=None):
            return np.ascontiguousarray(self.env.reset()["rgb"].transpose(2, 0, 1)), {}

        def step(self, action):
            obs, reward, done, info = self.env.step(int(action))
            truncated = bool(info.get("TimeLimit.truncated", False))
            return (
                np.ascontiguousarray(obs["rgb"].transpose(2, 0, 1)),
                reward,
                done and not truncated,
                truncated,
                {},
            )

        def close(self):
            self.env.close()

    _DOOM_CLASS = OurDoom
    return OurDoom


def _sf_make(full_env_name, cfg=None, env_config=None, render_mode=None):
    """Sample Factory's env factory (module level: its processes spawn).

    ``env_config.env_id`` is the env's index over all workers (worker index x
    envs per worker + vector index): it picks the scenario (``gym_ids[i %
    len]``, as our builder deals them out) and the straggler stream."""
    index = 0 if env_config is None else env_config.env_id
    h, w, skip = (int(v) for v in os.environ["APPO_BENCH_DOOM"].split(","))
    spec = json.loads(os.environ.get("APPO_BENCH_ENV") or "{}")
    gym_ids = spec.get("gym_ids") or ["habitat_ver/DoomMyWayHome-v0"]
    scenario = SCENARIOS[gym_ids[index % len(gym_ids)]]
    return _our_doom_class()(1 + index, (h, w), skip, scenario, spec.get("straggler"), index)


def _sf_child(args: argparse.Namespace) -> None:
    from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
    from sample_factory.envs.env_utils import register_env
    from sample_factory.train import run_rl

    os.environ["APPO_BENCH_DOOM"] = ",".join(map(str, [*args.resolution, args.frame_skip]))
    os.environ["APPO_BENCH_ENV"] = args.env_spec or ""
    register_env("habitat_ver_doom_my_way_home", _sf_make)
    per_worker = args.num_envs // args.num_workers
    argv = [
        "--env=habitat_ver_doom_my_way_home",
        f"--experiment={args.sf_experiment}",
        f"--train_dir={args.sf_train_dir}",
        "--device=cpu",
        "--algo=APPO",
        f"--num_workers={args.num_workers}",
        f"--num_envs_per_worker={per_worker}",
        f"--worker_num_splits={args.worker_num_splits}",
        f"--rollout={args.rollout}",
        f"--batch_size={args.rollout * args.batch_trajectories}",
        "--num_batches_per_epoch=1",
        f"--num_epochs={args.epochs}",
        "--with_vtrace=False",
        "--use_rnn=True",
        "--rnn_type=gru",
        "--rnn_size=256",
        "--encoder_conv_architecture=convnet_atari",
        "--encoder_conv_mlp_layers",
        "256",
        "--normalize_input=False",
        "--normalize_returns=False",
        "--decorrelate_experience_max_seconds=0",
        "--decorrelate_envs_on_one_worker=False",
        f"--train_for_env_steps={args.steps}",
        "--save_every_sec=100000",
        "--keep_checkpoints=1",
        "--save_best_every_sec=100000",
        "--experiment_summaries_interval=5",
        "--policy_workers_per_policy=1",
        "--num_policies=1",
        "--learning_rate=0.00025",
        "--gamma=0.99",
        "--exploration_loss_coeff=0.01",
        "--value_loss_coeff=0.5",
        "--max_grad_norm=0.5",
        "--ppo_clip_ratio=0.2",
        "--seed=1",
        "--with_wandb=False",
    ]
    parser, _ = parse_sf_args(argv)
    cfg = parse_full_cfg(parser, argv)
    sys.exit(run_rl(cfg))


# ------------------------------------------------------------------- our side
def _our_overrides(args: argparse.Namespace, out: Path, trainer: str) -> List[str]:
    h, w = args.resolution
    overrides = [
        f"habitat_baselines.checkpoint_folder={out}/ck",
        f"habitat_baselines.tensorboard_dir={out}/tb",
        f"habitat_baselines.log_file={out}/train.log",
        f"habitat_baselines.video_dir={out}/video",
        f"habitat_baselines.eval_ckpt_path_dir={out}/ck",
        "habitat_baselines.progress.enabled=False",
        f"habitat_baselines.num_environments={args.num_envs}",
        f"habitat_baselines.total_num_steps={args.steps}",
        "habitat_baselines.num_updates=-1",
        "habitat_baselines.num_checkpoints=1",
        "habitat_baselines.log_interval=5",
        f"habitat_baselines.embedded_env.resolution=[{h},{w}]",
        f"habitat_baselines.embedded_env.frame_skip={args.frame_skip}",
        f"habitat_baselines.rl.ppo.num_steps={args.rollout}",
        "habitat_baselines.rl.ppo.ppo_epoch=1",
        "habitat_baselines.rl.ppo.num_mini_batch=1",
        "habitat_baselines.rl.preemption.save_resume_state_interval=100000",
    ]
    if trainer == "appo":
        overrides += [
            f"habitat_baselines.rl.appo.num_rollout_workers={args.num_workers}",
            f"habitat_baselines.rl.appo.batch_trajectories={args.batch_trajectories}",
        ]
    return overrides


def _run_ours(args: argparse.Namespace, trainer: str, work: Path) -> Dict[str, Any]:
    out = work / trainer
    shutil.rmtree(out, ignore_errors=True)
    code = (
        "import json, sys\n"
        "from habitat_ver.config.compose import get_config\n"
        "from habitat_ver.run import execute_exp\n"
        "if __name__ == '__main__':\n"
        "    t = execute_exp(get_config(sys.argv[1], json.loads(sys.argv[2])), 'train')\n"
        "    print('RESULT', json.dumps(dict(steps=t.num_steps_done, sps=t.last_summary.mean_sps,"
        " seconds=t.last_summary.seconds, lag=getattr(t, 'policy_lag', [])[-50:])))\n"
    )
    config = f"doom/{trainer}_my_way_home"
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-c", code, config, json.dumps(_our_overrides(args, out, trainer))],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.time() - start
    if done.returncode != 0:
        return dict(ok=False, error=done.stderr[-3000:])
    result = json.loads(done.stdout.split("RESULT", 1)[1])
    curve = _tensorboard_curve(out / "tb")
    lags = result.pop("lag")
    return dict(
        ok=True,
        steps=result["steps"],
        sps_trainer=result["sps"],
        sps_whole_run=result["steps"] / wall,
        wall_s=wall,
        sps_steady=_steady_sps(curve),
        reward_vs_steps=curve["reward"],
        policy_lag_max=max((x for _, x in lags), default=None),
    )


def _tensorboard_curve(folder: Path) -> Dict[str, Any]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder))
    events.Reload()
    reward = [(int(s.step), float(s.value)) for s in events.Scalars("reward")]
    times = [(int(s.step), float(s.wall_time)) for s in events.Scalars("reward")]
    return dict(reward=reward[:: max(1, len(reward) // 40)], times=times)


def _steady_sps(curve: Dict[str, Any]) -> Optional[float]:
    times = curve["times"]
    if len(times) < 2:
        return None
    (s0, t0), (s1, t1) = times[len(times) // 10], times[-1]
    return (s1 - s0) / max(t1 - t0, 1e-9)


# ---------------------------------------------------------- Sample Factory run
FPS_LINE = re.compile(r"Total num frames: (\d+)")
REWARD_LINE = re.compile(r"Avg episode reward: \[\(0, '([-\d.e+]+)'\)\]")


def sf_python(path: str) -> str:
    """argparse type of ``--sf-python``: an existing executable."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise argparse.ArgumentTypeError(
            f"{path!r} is not an executable file: give the python of a venv with Sample "
            "Factory installed (benchmarks/requirements-sample-factory.txt, docs/APPO.md)"
        )
    return path


def _run_sf(args: argparse.Namespace, work: Path) -> Dict[str, Any]:
    if not args.sf_python:
        return dict(ok=False, error="no --sf-python given")
    train_dir = work / "sf"
    shutil.rmtree(train_dir, ignore_errors=True)
    child = [
        args.sf_python,
        str(Path(__file__).resolve()),
        "--sf-child",
        "--sf-train-dir",
        str(train_dir),
        "--steps",
        str(args.steps),
        "--num-envs",
        str(args.num_envs),
        "--num-workers",
        str(args.num_workers),
        "--rollout",
        str(args.rollout),
        "--batch-trajectories",
        str(args.batch_trajectories),
        "--frame-skip",
        str(args.frame_skip),
        "--resolution",
        *map(str, args.resolution),
        "--worker-num-splits",
        str(getattr(args, "worker_num_splits", 2)),
        "--epochs",
        str(getattr(args, "epochs", 1)),
        "--env-spec",
        getattr(args, "env_spec", ""),
    ]
    start = time.time()
    # Its own session: on a hang (e.g. a crashed learner, which Sample
    # Factory does not turn into an exit) the whole group is killed.
    process = subprocess.Popen(
        child,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=work,
        start_new_session=True,
    )
    watchdog = threading.Timer(args.sf_timeout, os.killpg, (process.pid, signal.SIGKILL))
    watchdog.start()
    frames: List[tuple] = []
    rewards: List[tuple] = []
    lines: List[str] = []
    for line in process.stdout:
        lines.append(line)
        now = time.time()
        match = FPS_LINE.search(line)
        if match:
            frames.append((int(match.group(1)), now))
        match = REWARD_LINE.search(line)
        if match and frames:
            rewards.append((frames[-1][0], float(match.group(1))))
    process.wait()
    watchdog.cancel()
    wall = time.time() - start
    try:  # Sample Factory's orphans (env processes of a killed run)
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if process.returncode != 0 or not frames:
        return dict(ok=False, error="".join(lines[-60:]))
    steady = [f for f in frames if f[0] > 0]
    sps_steady = None
    if len(steady) >= 2:
        (s0, t0), (s1, t1) = steady[0], steady[-1]
        sps_steady = (s1 - s0) / max(t1 - t0, 1e-9)
    return dict(
        ok=True,
        steps=frames[-1][0],
        sps_whole_run=frames[-1][0] / wall,
        wall_s=wall,
        sps_steady=sps_steady,
        reward_vs_steps=rewards[:: max(1, len(rewards) // 40)],
    )


# --------------------------------------------------------------------- main
def _table(results: Dict[str, Dict[str, Any]]) -> str:
    rows = [
        "| run | ok | env steps | steady SPS | whole-run SPS | last reward |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in results.items():
        if not r.get("ok"):
            rows.append(f"| {name} | no | - | - | - | - |")
            continue
        last = r["reward_vs_steps"][-1][1] if r["reward_vs_steps"] else float("nan")
        steady = "-" if r["sps_steady"] is None else f"{r['sps_steady']:.0f}"
        rows.append(
            f"| {name} | yes | {r['steps']} | {steady} | {r['sps_whole_run']:.0f} | {last:.3f} |"
        )
    return "\n".join(rows)


def _parse(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sf-python", default=None, type=sf_python, help="python of the Sample Factory venv"
    )
    parser.add_argument("--steps", type=int, default=100_000, help="env (agent) steps per run")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--num-workers", type=int, default=2, help="rollout workers")
    parser.add_argument("--rollout", type=int, default=64, help="T, steps per trajectory")
    parser.add_argument("--batch-trajectories", type=int, default=8)
    parser.add_argument("--frame-skip", type=int, default=4)
    parser.add_argument("--resolution", type=int, nargs=2, default=[72, 96], metavar=("H", "W"))
    parser.add_argument(
        "--sf-timeout",
        type=float,
        default=1800.0,
        help="seconds before a Sample Factory run is killed",
    )
    parser.add_argument(
        "--runs",
        default="appo,sample_factory,ver",
        help="comma-separated subset of appo, sample_factory, ver",
    )
    parser.add_argument("--out", default="outputs/benchmarks/appo_vs_sample_factory.json")
    parser.add_argument("--worker-num-splits", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--epochs", type=int, default=1, help=argparse.SUPPRESS)
    # JSON {"gym_ids": [...], "straggler": {...}} (benchmarks/trainer_sps.py).
    parser.add_argument("--env-spec", default="", help=argparse.SUPPRESS)
    parser.add_argument("--sf-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sf-train-dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sf-experiment", default="appo_vs_sf", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main() -> None:
    args = _parse()
    if args.sf_child:
        _sf_child(args)
        return
    work = Path(tempfile.mkdtemp(prefix="appo_vs_sf_"))
    results: Dict[str, Dict[str, Any]] = {}
    for name in args.runs.split(","):
        print(f"running {name} ...", flush=True)
        results[name] = (
            _run_sf(args, work) if name == "sample_factory" else _run_ours(args, name, work)
        )
        if not results[name]["ok"]:
            print(f"{name} failed:\n{results[name]['error']}", flush=True)
    ratio = None
    if results.get("appo", {}).get("ok") and results.get("sample_factory", {}).get("ok"):
        ratio = results["appo"]["sps_steady"] / results["sample_factory"]["sps_steady"]
    report = dict(
        git_sha=records.git_sha(),
        cpus=os.cpu_count(),
        settings=vars(args),
        results=results,
        appo_over_sample_factory_steady_sps=ratio,
        time=time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(_table(results))
    if ratio is not None:
        print(f"appo / Sample Factory steady SPS: {ratio:.2f}x")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
