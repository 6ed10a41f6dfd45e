"""Does a HAB skill learn on the real robot?  (not a test)

Trains VER (our ``ver`` trainer, ``VERPolicy``) on one HAB skill
(``--config rearrange/ver_<skill>``) with habitat-sim in the skill config's CPU
profile (:data:`SCALED`: ``hab_profile=cpu``, a state-only policy, no camera
rendered, 4 envs, LSTM 128), for a wall-clock budget (``--minutes``; the run is
stopped there and its last checkpoint kept: checkpoints are written
atomically) or a step budget (``--steps``).  Then evaluates on the same val
episodes

* the untrained policy: the same config, weights freshly initialised
  (``eval.should_load_ckpt=False``), and
* the last checkpoint,

and writes JSON and a markdown table (metric, untrained, trained) to
``benchmarks/results/hab_skill_learning_<skill>_<time>.{json,md}`` with the git
SHA, device, config and machine load, and the training's CPU milliseconds per
env step by kind of process (trainer, env workers) over its steady window
(:mod:`process_cpu`).  Needs the generated HAB data
(``python -m habitat_ver.tools.make_hab_dataset``).

    .venv/bin/python benchmarks/hab_skill_learning.py --minutes 20 --episodes 10
    # evaluate a run stopped by hand (its last checkpoint in WORK/ckpt)
    .venv/bin/python benchmarks/hab_skill_learning.py --evaluate-only --work WORK
    # one of its checkpoints, every val episode 5 times
    .venv/bin/python benchmarks/hab_skill_learning.py --evaluate-only --work WORK \
        --checkpoint WORK/ckpt/ckpt.60.pth --evals-per-episode 5
    # train the run in WORK 30 minutes more (from its resume state), then evaluate
    .venv/bin/python benchmarks/hab_skill_learning.py --minutes 30 --resume --work WORK
    # a new run (other reward weights, say) that starts from another run's weights
    .venv/bin/python benchmarks/hab_skill_learning.py --minutes 30 --work WORK2 \
        --init-from WORK/ckpt/ckpt.80.pth --override ...
    # another skill
    .venv/bin/python benchmarks/hab_skill_learning.py --minutes 20 --config rearrange/ver_close_cab

Only checkpoints count: a run stopped at its budget keeps the weights of its
last checkpoint (every ``--checkpoint-interval`` updates), not of its last update.
"""

import argparse
import contextlib
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import process_cpu
import run_logs
import sps_report

from habitat_ver.common.atomic import write_atomically
from habitat_ver.system.stop_signals import sigint_as_in_a_terminal
from habitat_ver.trainers.eval_header import COUNTED, HEADER

ROOT = Path(__file__).resolve().parents[1]
# The paper's pick, with base movement; hab_arrangement_steps.py steps it too.
CONFIG = "rearrange/ver_pick"
# The skill configs this script trains (--config).
SKILLS = (
    "pick",
    "pick_nonav",
    "place",
    "place_nonav",
    "nav_to_obj",
    "open_fridge",
    "close_fridge",
    "open_cab",
    "close_cab",
)
CONFIGS = tuple(f"rearrange/ver_{skill}" for skill in SKILLS)
SENSOR = "habitat.simulator.agents.main_agent.sim_sensors.head_depth_sensor"
# The paper's policy and task (configs/.../rearrange/ver_pick.yaml) on a CPU,
# on make_hab_dataset's data; trainer_sps.py's pick workload (Table 1) runs them too.
PICK_ON_A_CPU = [
    "hab_data=generated",
    "habitat_baselines.rl.ppo.hidden_size=128",  # paper: 512
    "habitat.environment.max_episode_steps=200",  # upstream pick: 300
    # State only: joints, end-effector position, holding, the object's position
    # relative to the end effector.  VERPolicy's depth ResNet costs ~0.06 s per
    # step on the CPU (~2 steps/s end to end, no learning shown in 2,560 steps);
    # without it the run does ~50 steps/s on 2 loaded cores.
    "habitat_baselines.ver_policy.visual_keys=[]",
]
# The pick env without its camera for every trainer, upstream's too (ours drop
# a camera the policy does not read by themselves:
# habitat_ver/config/unread_cameras.py): physics only.
PHYSICS_ONLY = [
    "~habitat.simulator.agents.main_agent.sim_sensors.head_depth_sensor",
    "habitat.simulator.concur_render=False",
    "habitat.gym.obs_keys=[obj_start_sensor,joint,is_holding,relative_resting_position]",
]
# A learning run: the skill config's CPU profile (hab_profile=cpu: state-only
# policy, no camera rendered, 4 envs, LSTM 128; habitat_ver/config/hab_profile.py).
SCALED = ["hab_data=generated", "hab_profile=cpu"]


def lr_schedule(steps: Optional[int]) -> List[str]:
    """habitat-baselines' linear decay of the learning rate to 0 at a step
    budget (``--steps``); constant for a time budget, which has no end step."""
    return [f"habitat_baselines.rl.ppo.use_linear_lr_decay={steps is not None}"]


AVERAGE = re.compile(r"Average episode ([\w./-]+): (-?[0-9.eE+-]+|nan|inf)")


def run(
    config: str,
    overrides: List[str],
    log: Path,
    deadline_s: Optional[float] = None,
    sampler: Optional[List[process_cpu.ProcessSampler]] = None,
) -> Dict:
    """``habitat_baselines.run --config-name=config`` with ``overrides``;
    stopped after ``deadline_s``.  With ``sampler`` (a list), the run's
    processes' CPU is sampled throughout and the
    :class:`process_cpu.ProcessSampler` appended to it."""
    cmd = [sys.executable, "-m", "habitat_baselines.run", f"--config-name={config}", *overrides]
    start = time.time()
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # started from a background job, the run would not see the budget's SIGINT
            preexec_fn=sigint_as_in_a_terminal,
        )
        if sampler is not None:
            sampler.append(process_cpu.ProcessSampler(proc.pid))
        with sampler[-1] if sampler is not None else contextlib.nullcontext():
            try:
                rc = proc.wait(timeout=deadline_s)
                stopped = False
            except subprocess.TimeoutExpired:
                rc, stopped = _stop(proc), True
            except BaseException:  # this script stopped (Ctrl-C, SIGTERM): the run too
                _stop(proc)
                raise
    return {"cmd": cmd, "rc": rc, "stopped_at_budget": stopped, "wall_s": time.time() - start}


def _stop(proc: subprocess.Popen) -> int:
    """Stops the run in its own session as Ctrl-C would (it saves its resume
    state), killing it after a minute; returns its exit code."""
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait()


def training_cpu(tb: Path, log: Path, sampler: process_cpu.ProcessSampler) -> Dict:
    """CPU per env step by kind of process over the training's steady window
    (read from its TensorBoard events ``tb`` and ``log``), or ``{"error": why}``."""
    try:
        if not tb.is_dir():
            raise ValueError(f"the run wrote no TensorBoard folder {tb}")
        series = run_logs.read_run(str(tb), log.read_text())
        if not sampler.snapshots:
            raise ValueError("no CPU snapshots")
        start, end, steps = sampled_window(series, sampler.snapshots[-1].wall)
        return process_cpu.window_costs(sampler.snapshots, start, end, steps)
    except (OSError, KeyError, ValueError) as error:
        return {"error": str(error)}


def sampled_window(series: run_logs.Series, last_sample: float) -> Tuple[float, float, float]:
    """``(start, end, steps)`` of the steady window over the updates logged by
    ``last_sample`` (wall time): a run stopped at its budget logs its last
    update while it shuts down, after the sampler's last reading."""
    points = [(wall, step) for step, _, wall in series["sps"][1] if wall <= last_sample]
    (t0, s0), (t1, s1) = run_logs.steady_window(points)
    return t0, t1, s1 - s0


def averages(text: str) -> Dict[str, float]:
    """The ``Average episode <metric>: <value>`` lines of an evaluation log."""
    return {name: float(value) for name, value in AVERAGE.findall(text)}


# Points of a learning curve: the training's episode metrics (TensorBoard's
# running means over the reward window) averaged into this many step bins.
CURVE_BINS = 40
# The curves a record holds: the skill's success and the episode return.
SUCCESS_TAGS = ("metrics/pick_success", "metrics/place_success", "metrics/art_obj_success")
RETURN_TAG = "reward"


def binned(points: List[Tuple[float, float]], bins: int) -> List[List[float]]:
    """``(step, value)`` points as at most ``bins`` ``[step, mean value]``
    points: equal step ranges from the first step to the last, each point at
    its range's mean step; ranges without a point are left out."""
    if not points:
        return []
    first, last = points[0][0], points[-1][0]
    width = (last - first) / bins or 1.0
    sums: Dict[int, List[float]] = {}
    for step, value in points:
        index = min(int((step - first) / width), bins - 1)
        total = sums.setdefault(index, [0.0, 0.0, 0.0])
        total[0] += step
        total[1] += value
        total[2] += 1
    return [[total[0] / total[2], total[1] / total[2]] for _, total in sorted(sums.items())]


def training_series(work: Path) -> Dict[str, List[Tuple[float, float]]]:
    """``(step, value)`` points of the success and return tags over every
    session of the run in ``work`` (``tb``, ``tb_resumed_<n>``).  A run
    started from another run's weights (``--init-from``) begins with that
    run's points up to the checkpoint it took (its own first stages' too),
    and its own steps count on from there."""
    series: Dict[str, List[Tuple[float, float]]] = {}
    offset = 0.0
    source = init_source(work)
    if source and source.get("step") is not None:
        offset = float(source["steps_in_all"])
        for tag, points in training_series(Path(source["checkpoint"]).parent.parent).items():
            series[tag] = [(step, value) for step, value in points if step <= offset]
    for folder in [work / "tb", *sorted(work.glob("tb_resumed_*"))]:
        if not folder.is_dir():
            continue
        for tag, points in run_logs.read_scalars(str(folder)).items():
            if tag in SUCCESS_TAGS or tag == RETURN_TAG:
                series.setdefault(tag, []).extend(
                    (offset + step, value) for step, value, _ in points
                )
    return series


def training_curves(work: Path) -> Dict[str, Any]:
    """The run's learning curves (:func:`training_series`):
    ``{"success_metric": name, "success": points, "return": points,
    "started_from_step": step or None}`` (points :func:`binned`), the
    training episodes' own figures (train arrangements, sampled actions)."""
    series = training_series(work)
    success = next((tag for tag in SUCCESS_TAGS if tag in series), None)
    source = init_source(work)
    return {
        "success_metric": success and success.split("/", 1)[1],
        "success": binned(sorted(series[success]), CURVE_BINS) if success else [],
        "return": binned(sorted(series.get(RETURN_TAG, [])), CURVE_BINS),
        "started_from_step": source and source.get("steps_in_all"),
    }


# The file in --work that names the commit its last training session ran.
TRAINED_COMMIT = "trained_commit"
# The files in --work of a run started from another run's weights (--init-from):
# those weights, as upstream's pretrained loading reads them, and where they came from.
INIT_WEIGHTS = "init_weights.pth"
INIT_FROM = "init_from.json"


def init_overrides(work: Path, ckpt: Path) -> List[str]:
    """Start the run in ``work`` from the policy weights of ``ckpt`` (a
    checkpoint of ours): writes them as upstream's pretrained loading reads
    them (``habitat_baselines.rl.ddppo.pretrained``, keys under
    ``actor_critic.``), notes where they came from (``work/init_from.json``:
    checkpoint, its run's steps and config) and returns the overrides."""
    import torch

    saved = torch.load(ckpt, map_location="cpu", weights_only=False)
    weights = {"state_dict": {f"actor_critic.{k}": v for k, v in saved["state_dict"].items()}}
    write_atomically(str(work / INIT_WEIGHTS), lambda f: torch.save(weights, f))
    source = {
        "checkpoint": str(ckpt.resolve()),
        "step": saved.get("extra_state", {}).get("step"),
        "config": recorded_config(ckpt.parent.parent),
    }
    text = (json.dumps(source, indent=1) + "\n").encode()
    write_atomically(str(work / INIT_FROM), lambda f: f.write(text))
    return [
        "habitat_baselines.rl.ddppo.pretrained=True",
        f"habitat_baselines.rl.ddppo.pretrained_weights={work / INIT_WEIGHTS}",
    ]


def init_source(work: Path) -> Optional[Dict]:
    """The run whose weights the run in ``work`` started from, if any, with
    ``steps_in_all``: the steps behind those weights over every stage (the
    checkpoint's own, and those of the run it started from in turn, where
    that run's folder is still there)."""
    path = work / INIT_FROM
    if not path.exists():
        return None
    source = dict(json.loads(path.read_text()))
    earlier = init_source(Path(source["checkpoint"]).parent.parent)
    source["steps_in_all"] = (source.get("step") or 0) + (earlier["steps_in_all"] if earlier else 0)
    return source


def record_config(work: Path, config: str) -> None:
    """Write the config a new run in ``work`` trains (``work/config_name``)."""
    (work / "config_name").write_text(config + "\n")


def recorded_config(work: Path) -> Optional[str]:
    """The config the run in ``work`` trains (:func:`record_config`), if recorded."""
    recorded = work / "config_name"
    return recorded.read_text().strip() if recorded.exists() else None


def config_mismatch(work: Path, config: str) -> Optional[str]:
    """The error line when the run recorded in ``work`` trains another config
    than ``config``, else None (also for a run that recorded none)."""
    trained = recorded_config(work)
    if trained is None or trained == config:
        return None
    return f"--config {config}: the run in {work} trains {trained}; pass --config {trained}"


def last_checkpoint(folder: Path) -> Optional[Path]:
    ckpts = sorted(folder.glob("ckpt.*.pth"), key=lambda p: int(p.name.split(".")[1]))
    return ckpts[-1] if ckpts else None


def evaluated(text: str, ckpt: Optional[Path]) -> bool:
    """Whether the log ``text`` holds a whole evaluation of ``ckpt`` (None:
    of the untrained policy, whatever checkpoint its header names)."""
    headers = [m for m in map(HEADER.search, text.splitlines()) if m]
    if not (headers and averages(text)):
        return False
    return ckpt is None or headers[-1].group("checkpoint") == str(ckpt)


def evaluation_counts(args: argparse.Namespace) -> List[str]:
    """The overrides that say which val episodes are evaluated, how often.

    With ``--evals-per-episode`` K > 1 every val episode is evaluated K times
    (fresh action samples each time: the success rate of few episodes is
    measured more finely); upstream's evaluator repeats episodes only when
    asked for all of them, so ``--episodes`` is then not read."""
    repeats = args.evals_per_episode
    count = -1 if repeats > 1 else args.episodes
    return [
        f"habitat_baselines.test_episode_count={count}",
        f"habitat_baselines.eval.evals_per_ep={repeats}",
    ]


def evaluate(work: Path, name: str, ckpt: Path, load: bool, args: argparse.Namespace) -> Dict:
    repeats = args.evals_per_episode
    # An evaluation of another protocol is never read as this one's.
    log = work / (f"eval_{name}.log" if repeats == 1 else f"eval_{name}_x{repeats}.log")
    overrides = [
        *SCALED,
        *args.override,
        f"habitat.seed={args.seed}",
        "habitat_baselines.evaluate=True",
        f"habitat_baselines.eval_ckpt_path_dir={ckpt}",
        f"habitat_baselines.eval.should_load_ckpt={load}",
        # Both evaluations run this config (the same episodes, one env), not the
        # checkpoint's; upstream also returns no config at all for
        # should_load_ckpt=False unless this is False (read_write(None) fails).
        "habitat_baselines.load_resume_state_config=False",
        "habitat_baselines.eval.split=val",
        *evaluation_counts(args),
        "habitat_baselines.num_environments=1",
        f"habitat_baselines.checkpoint_folder={work / ('eval_ckpt_' + name)}",
        f"habitat_baselines.tensorboard_dir={work / ('tb_eval_' + name)}",
        f"habitat_baselines.log_file={work / ('eval_' + name + '_log.txt')}",
    ]
    if args.evaluate_only and log.exists() and evaluated(log.read_text(), ckpt if load else None):
        # --evaluate-only reads an evaluation of the same checkpoint already in
        # --work (the untrained one can run beside the training, as it needs
        # no trained weights)
        result: Dict[str, Any] = {"cmd": None, "rc": 0, "reused_log": str(log)}
    else:
        result = run(args.config, overrides, log)
    text = log.read_text()
    result["metrics"] = averages(text)
    # What the averages are over: the episodes there are, when fewer than
    # asked, each evaluated `repeats` times (the log counts evaluations).
    counted = [m.group("episodes") for m in map(COUNTED.search, text.splitlines()) if m]
    result["episodes"] = int(counted[-1]) // repeats if counted else None
    result["evals_per_episode"] = repeats
    result["checkpoint"] = str(ckpt) if load else None
    return result


def checkpoint_step(ckpt: Path) -> Dict:
    import torch

    extra = torch.load(ckpt, map_location="cpu", weights_only=False).get("extra_state", {})
    return {k: extra.get(k) for k in ("step", "wall_time")}


def table(report: Dict) -> str:
    untrained = report["untrained"]["metrics"]
    trained = report["trained"]["metrics"]
    rows = ["| metric | untrained | trained |", "|---|---|---|"]
    for name in sorted(set(untrained) | set(trained)):
        u, t = untrained.get(name), trained.get(name)
        rows.append(
            f"| {name} | {'' if u is None else f'{u:.4f}'} | {'' if t is None else f'{t:.4f}'} |"
        )
    return "\n".join(rows)


def main() -> None:
    # SIGTERM (kill, a scheduler) unwinds like Ctrl-C, so the run stops with it.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("--minutes", type=float, help="training wall-clock budget")
    budget.add_argument("--steps", type=int, help="training env-step budget")
    budget.add_argument(
        "--evaluate-only", action="store_true", help="evaluate the run already in --work"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="train the run in --work further, from its resume state (its own TensorBoard "
        "folder and log: tb_resumed_<n>, train_resumed_<n>.log)",
    )
    parser.add_argument("--config", choices=CONFIGS, default=CONFIG, help="the skill to train")
    parser.add_argument("--episodes", type=int, default=20, help="val episodes per evaluation")
    parser.add_argument(
        "--evals-per-episode",
        type=int,
        default=1,
        help="evaluate every val episode this many times (> 1: all of them, --episodes unread)",
    )
    parser.add_argument(
        "--checkpoint",
        type=Path,
        help="with --evaluate-only: the checkpoint of the run in --work to evaluate "
        "(default: its last)",
    )
    parser.add_argument(
        "--init-from",
        type=Path,
        help="a new run starts from this checkpoint's policy weights (another run's: "
        "a curriculum stage, other reward weights); the record names it",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--override", action="append", default=[], help="extra Hydra override (repeatable)"
    )
    parser.add_argument("--checkpoint-interval", type=int, default=10, help="in updates")
    parser.add_argument("--work", type=Path, default=Path("/tmp/hab_skill_learning"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    ckpt_dir = args.work / "ckpt"
    if args.evals_per_episode < 1:
        parser.error(f"--evals-per-episode {args.evals_per_episode}: must be >= 1")
    if args.checkpoint is not None and not (args.evaluate_only and args.checkpoint.is_file()):
        parser.error(
            f"--checkpoint {args.checkpoint}: must be a checkpoint file, with --evaluate-only"
        )
    if args.resume and args.evaluate_only:
        parser.error("--resume trains further: give --minutes or --steps, not --evaluate-only")
    if args.init_from is not None and (
        args.resume or args.evaluate_only or not args.init_from.is_file()
    ):
        parser.error(
            f"--init-from {args.init_from}: must be a checkpoint file, for a new run "
            "(not with --resume or --evaluate-only)"
        )
    has_checkpoints = ckpt_dir.exists() and any(ckpt_dir.iterdir())
    if args.resume and not has_checkpoints:
        sys.exit(f"--resume: {ckpt_dir} holds no run to resume")
    if not args.evaluate_only and not args.resume and has_checkpoints:
        sys.exit(f"{ckpt_dir} is not empty: pass another --work, or --resume to train it further")
    if has_checkpoints:
        mismatch = config_mismatch(args.work, args.config)
        if mismatch:
            sys.exit(mismatch)
    else:
        record_config(args.work, args.config)
    # A resumed session logs beside the first: tb, then tb_resumed_1, ...
    session = len(list(args.work.glob("tb_resumed_*"))) + 1 if args.resume else 0
    tb = args.work / (f"tb_resumed_{session}" if session else "tb")
    train_log = args.work / (f"train_resumed_{session}.log" if session else "train.log")
    total = args.steps if args.steps is not None else 10**9
    init = init_overrides(args.work, args.init_from) if args.init_from else []
    train_overrides = [
        *SCALED,
        *lr_schedule(args.steps),
        *args.override,
        *init,
        f"habitat.seed={args.seed}",
        f"habitat_baselines.total_num_steps={total}",
        "habitat_baselines.num_checkpoints=-1",
        f"habitat_baselines.checkpoint_interval={args.checkpoint_interval}",
        "habitat_baselines.log_interval=5",
        f"habitat_baselines.checkpoint_folder={ckpt_dir}",
        f"habitat_baselines.tensorboard_dir={tb}",
        f"habitat_baselines.log_file={args.work / 'train_log.txt'}",
    ]
    load_before = os.getloadavg()
    # The code the run trains with (the checkout may move on meanwhile).
    git_sha = sps_report.git_sha()
    deadline = args.minutes * 60 if args.minutes is not None else None
    if args.evaluate_only:
        train: Dict[str, Any] = {"cmd": None, "rc": None, "stopped_at_budget": None, "wall_s": None}
    else:
        budget_text = f"{args.minutes:.1f} min" if deadline else f"{total} steps"
        print(f"training {args.config} ({budget_text})")
        samplers: List[process_cpu.ProcessSampler] = []
        # The commit a run's newest weights were trained with: an evaluation
        # alone (--evaluate-only, later code) reads it back from the folder.
        write_atomically(str(args.work / TRAINED_COMMIT), lambda f: f.write(git_sha.encode()))
        train = run(args.config, train_overrides, train_log, deadline, samplers)
        train["cpu"] = training_cpu(tb, train_log, samplers[0])
        train["resumed"] = args.resume
        train["session_wall_s"] = train["wall_s"]
    load_after_train = os.getloadavg()
    last = args.checkpoint or last_checkpoint(ckpt_dir)
    if last is None:
        sys.exit(f"training wrote no checkpoint; see {train_log}")
    train.update(checkpoint=str(last), **checkpoint_step(last))
    trained_commit = args.work / TRAINED_COMMIT
    train["commit"] = trained_commit.read_text().strip() if trained_commit.exists() else None
    if train["wall_s"] is None or args.resume:
        # --evaluate-only or --resume: the checkpoint's own training time (of
        # every session, start-ups not counted)
        train["wall_s"] = train["wall_time"]
    print(f"trained {train['step']} steps in {train['wall_s']:.0f} s; evaluating {last.name}")

    report = {
        "benchmark": "hab_skill_learning",
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "git_sha": git_sha,
        "device": "cpu (habitat-sim CPU rendering, torch CPU)",
        "cpus": os.cpu_count(),
        "config": args.config,
        "overrides": train_overrides,
        "budget": {
            "minutes": args.minutes,
            "steps": args.steps,
            "evaluate_only": args.evaluate_only,
            "resume": args.resume,
        },
        "episodes": args.episodes,
        "evals_per_episode": args.evals_per_episode,
        "load_before": load_before,
        "load_after_train": load_after_train,
        "train": train,
        "init_from": init_source(args.work),
        "curves": training_curves(args.work),
        "untrained": evaluate(args.work, "untrained", last, False, args),
        "trained": evaluate(args.work, "trained", last, True, args),
    }
    report["load_after"] = os.getloadavg()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = args.out / f"hab_skill_learning_{args.config.split('/ver_')[-1]}_{stamp}"
    sps_report.write_json(report, path.with_suffix(".json"))
    md = (
        f"{args.config}, {train['step']} steps in {train['wall_s']:.0f} s, "
        f"{report['trained']['episodes']} val episodes x {args.evals_per_episode}, "
        f"git {report['git_sha'][:8]}, "
        f"load {load_before[0]:.1f} -> {report['load_after'][0]:.1f}\n"
        f"training {sps_report.cpu_line(train.get('cpu'))}\n\n{table(report)}\n"
    )
    write_atomically(str(path.with_suffix(".md")), lambda f: f.write(md.encode()))
    print(md)
    print(f"wrote {path}.json and .md")
    print(json.dumps({k: report[k]["rc"] for k in ("untrained", "trained")}))


if __name__ == "__main__":
    main()
