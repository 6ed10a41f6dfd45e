"""Steps per second of the trainers, side by side in one run (not a test).

Runs each trainer on the same workload and step budget, one after the other on
this machine, and reports per system: steady steps/s (start-up excluded: the
step counter between the first and the last logged update, from TensorBoard's
wall times), the trainer's own mean steps/s (start-up included), the fraction
of the wait-bound limit (straggler workloads; ``benchmarks/wait_bound.py``) and
the collection/learning split of an update's wall time (from the logged
timings; ``benchmarks/run_logs.py``).  Then the ratios and the targets
(``benchmarks/sps_report.py``).

    # the three workloads: (a) My Way Home, (b) mixed scenarios + 2 ms
    # stragglers, (c) wait-bound (doom/ddppo_wait_bound: 16 envs, T=64)
    .venv/bin/python benchmarks/trainer_sps.py --steps 40000
    # (c) only, with Sample Factory on the same env (its venv: docs/APPO.md)
    .venv/bin/python benchmarks/trainer_sps.py --workloads wait_bound --steps 40000 \\
        --sf-python /tmp/sfvenv/bin/python
    # one config only
    .venv/bin/python benchmarks/trainer_sps.py --config gym/ddppo_cartpole --steps 40000
    # the real simulator (habitat-sim installed): PointNav on simple_room
    .venv/bin/python benchmarks/trainer_sps.py --workloads pointnav --envs 8 --steps 4096
    # the same on two scenes of different cost, simple_room and the furnished
    # apartment (needs make_hab_dataset's data, as pick does)
    .venv/bin/python benchmarks/trainer_sps.py --workloads pointnav_mixed --envs 2 --steps 4096
    # HAB's Fetch pick with VERPolicy, the VER paper's Table 1 (needs
    # python -m habitat_ver.tools.make_hab_dataset --assets ../shared/habitat-data)
    .venv/bin/python benchmarks/trainer_sps.py --workloads pick --envs 8 --steps 4096

Writes JSON (git SHA, machine, settings, per-system results, ratios, targets)
atomically after every system, and a plot next to it (``--out``).
"""

import argparse
import gzip
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

# The benchmarks folder is not a package: its sibling modules are found by path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import appo_vs_sample_factory
import hab_skill_learning
import process_cpu
import run_logs
import sps_report
import wait_bound

ROOT = Path(__file__).resolve().parents[1]

_VER = ["habitat_baselines.trainer_name=ver", "habitat_baselines.rollout_storage_name=VERStorage"]
# name -> extra Hydra overrides on top of the given (ddppo) config.
VARIANTS = {
    "ddppo": [],
    "ver": _VER,
    "nover": _VER + ["habitat_baselines.rl.ver.variable_experience=False"],
    "ver_overlap": _VER + ["habitat_baselines.rl.ver.overlap_rollouts_and_learn=True"],
    "ver_auto": _VER + ["habitat_baselines.rl.ver.overlap_rollouts_and_learn=auto"],
    # The learner's threads fixed at 2 instead of `auto`'s choice per update.
    "ver_threads2": _VER + ["habitat_baselines.learner.num_threads=2"],
    "appo": ["habitat_baselines.trainer_name=appo"],
    "upstream_ddppo": ["habitat_baselines.trainer_name=upstream_ddppo"],
    # habitat-baselines' own VER, on the same envs (its default 2 inference workers).
    "upstream_ver": ["habitat_baselines.trainer_name=upstream_ver"],
}
# How each system is started: ``python -m habitat_ver.run``, except upstream
# ``ver``, whose env workers bypass every env factory and would step bare,
# unwrapped envs: its launcher makes them build ours (upstream_ver_on_our_envs.py).
DEFAULT_LAUNCHER = ["-m", "habitat_ver.run"]
LAUNCHERS = {"upstream_ver": [str(Path(__file__).resolve().parent / "upstream_ver_on_our_envs.py")]}
# What the worker processes that bear none of our names are
# (process_cpu): upstream ver's are its inference workers (its env workers
# build our envs, which name them); upstream ddppo's are its env workers.
UNNAMED_WORKERS = {"upstream_ver": process_cpu.OTHER_WORKERS}
# Sample Factory's APPO (its own venv, --sf-python): not a variant of our config.
SAMPLE_FACTORY = "sample_factory"

# A furnished apartment make_hab_dataset writes (docs/HAB.md: its first train
# arrangement), for the mixed PointNav workload (relative to the repository root).
HAB_SCENE_DATASET = "data/hab_ver/hab_ver.scene_dataset_config.json"
HAB_APARTMENT = "data/hab_ver/scenes/hab_ver_v3_sc0_staging_00.scene_instance.json"
MIXED_NAME = "mixed"
MIXED_DATASET = [
    "--stage",
    "simple_room.glb",
    "--scene-dataset",
    HAB_SCENE_DATASET,
    "--stage",
    HAB_APARTMENT,
]
# Named workloads: (a) homogeneous, (b) heterogeneous but CPU-bound, (c)
# wait-bound (VER's regime), and on the real simulator (needs
# habitat-sim): habitat-lab's PointNav, and HAB's pick skill with the Fetch robot
# (the VER paper's Table 1).
WORKLOADS = {
    "homogeneous": "doom/ddppo_my_way_home",
    "heterogeneous": "doom/ddppo_mixed_stragglers",
    "wait_bound": "doom/ddppo_wait_bound",
    "pointnav": "pointnav/ddppo_simple_room",
    "pointnav_mixed": "pointnav/ddppo_simple_room",
    "pick": "rearrange/ver_pick",
}
# Overrides that make a named workload of its config, before the variant's
# own.
WORKLOAD_OVERRIDES = {
    # Heterogeneous PointNav: the same task and sensors on
    # simple_room and on the furnished apartment, whose RGB-D frames take ~8x
    # longer to render on the CPU; with 2 envs each gets one scene
    # (envs/factory.py split_scenes).
    "pointnav_mixed": [
        f"habitat.dataset.data_path='data/datasets/pointnav/{MIXED_NAME}/v1/{{split}}/{{split}}.json.gz'",
    ],
    # The pick workload starts from rearrange/ver_pick (VERPolicy, the paper's
    # PPO settings) made a ddppo run, so that every variant's overrides apply
    # to it as to the ddppo configs; with hab_skill_learning.py's policy and task
    # on a CPU, physics only (no camera: the state-only policy reads none).
    "pick": [
        *hab_skill_learning.PICK_ON_A_CPU,
        *hab_skill_learning.PHYSICS_ONLY,
        "habitat_baselines.trainer_name=ddppo",
        "habitat_baselines.rollout_storage_name=LockstepRolloutStorage",
    ],
}
DEFAULT_WORKLOADS = ["homogeneous", "heterogeneous", "wait_bound"]
# Real-sim workloads whose env and inference ceilings are measured too (as on
# the straggler workloads): how fast the envs step with a fixed action, and
# when answered by the policy alone, bounds what any collector reaches.
CEILING_WORKLOADS = {"pick"}
# Workloads where appo gets one rollout worker per env, so that no worker adds
# up the waits of several envs (the config is a ddppo one: rl.appo is
# refused there, so the layout is given here).
APPO_WORKER_PER_ENV = {WORKLOADS["wait_bound"]}


def ensure_pointnav_dataset(
    stages_dir: Optional[str],
    root: Path = ROOT / "data",
    options: Sequence[str] = (),
    name: str = "simple_room",
) -> None:
    """Generate the PointNav dataset ``name`` into ``root`` if it is missing.

    Args:
        stages_dir: habitat-sim's test stages (None: the generator's default).
        root: the data root (``--out`` of the generator).
        options: more generator options (episode counts, geodesic range,
            stages).
        name: the dataset's folder under ``datasets/pointnav`` (its ``--name``).
    """
    train = root / "datasets/pointnav" / name / "v1/train/train.json.gz"
    wanted = {Path(stage).name for flag, stage in zip(options, options[1:]) if flag == "--stage"}
    if train.exists():
        made_on = dataset_stages(train)
        if not wanted or made_on == wanted:
            return
        # e.g. the mixed dataset of an apartment make_hab_dataset no longer writes
        print(f"{train} is on {sorted(made_on)}, not {sorted(wanted)}: made again", flush=True)
    print(f"generating {train} ...", flush=True)
    cmd = [sys.executable, "-m", "habitat_ver.tools.make_pointnav_dataset", "--out", str(root)]
    cmd += ["--name", name]
    done = subprocess.run(
        cmd + (["--stages-dir", stages_dir] if stages_dir else []) + list(options),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"dataset generation failed: {done.stderr.strip().splitlines()[-1:]}")


def dataset_stages(episodes: Path) -> Set[str]:
    """The file names of the scenes a PointNav episode file's episodes are on."""
    with gzip.open(episodes, "rt") as f:
        return {Path(e["scene_id"]).name for e in json.load(f)["episodes"]}


def settings_overrides(args: argparse.Namespace) -> List[str]:
    """The overrides every system of a workload runs with (envs, T, budget)."""
    overrides = [
        f"habitat_baselines.total_num_steps={args.steps}",
        "habitat_baselines.num_updates=-1",
        "habitat_baselines.progress.enabled=False",
        "habitat_baselines.log_interval=1",
    ]
    if args.envs:
        overrides.append(f"habitat_baselines.num_environments={args.envs}")
    if args.num_steps:
        overrides.append(f"habitat_baselines.rl.ppo.num_steps={args.num_steps}")
    return overrides


def appo_overrides(workload: Dict[str, Any], envs: int) -> List[str]:
    """appo's worker layout: one rollout worker per env, one env group, and a
    batch of one trajectory per env on the workloads of
    :data:`APPO_WORKER_PER_ENV`, whatever ``--envs`` says; otherwise appo's
    defaults."""
    if workload["appo_workers_per_env"]:
        return [
            f"habitat_baselines.rl.appo.num_rollout_workers={envs}",
            "habitat_baselines.rl.appo.num_env_groups=1",
            f"habitat_baselines.rl.appo.batch_trajectories={envs}",
        ]
    return []


def run_variant(
    config: str,
    overrides: List[str],
    keep_curve: bool = False,
    launcher: Optional[List[str]] = None,
    then: Optional[Callable[[str], Dict[str, Any]]] = None,
    unnamed_workers: str = process_cpu.OTHER_WORKERS,
) -> Dict[str, Any]:
    """Train ``config`` in a subprocess (``python`` + ``launcher``, by default
    ``-m habitat_ver.run``): :func:`run_logs.summarize` of its run (steady
    rate, split, timings; the episode curves with ``keep_curve``) and
    :func:`where_the_cpu_went` over its steady window, or
    ``{"error": [last lines]}``.  ``then``, given the run's folder (checkpoints
    in ``ck/``) before it is removed, returns entries added to the result."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            *(launcher or DEFAULT_LAUNCHER),
            f"--config-name={config}",
            f"habitat_baselines.checkpoint_folder={out}/ck",
            f"habitat_baselines.tensorboard_dir={out}/tb",
            f"habitat_baselines.log_file={out}/train.log",
            *overrides,
        ]
        start = time.monotonic()
        done, sampler = run_sampled(cmd, unnamed_workers)
        wall = time.monotonic() - start
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-3:], "wall_s": wall}
        try:  # one system's odd log must not lose the others
            # habitat's logger writes to stderr (upstream ver's timing lines too).
            summary = run_logs.summarize(run_logs.read_run(f"{out}/tb", done.stderr + done.stdout))
            summary.update(where_the_cpu_went(sampler, *summary["steady_window"]))
        except ValueError as error:
            return {"error": [str(error)], "wall_s": wall}
        if not keep_curve:
            summary = {k: v for k, v in summary.items() if not k.endswith("_curve")}
        return {**summary, "wall_s": wall, **(then(out) if then else {})}


def run_sampled(
    cmd: List[str], unnamed_workers: str = process_cpu.OTHER_WORKERS
) -> Tuple[subprocess.CompletedProcess, process_cpu.ProcessSampler]:
    """Run ``cmd`` from the repository root, its processes' CPU sampled
    throughout (:mod:`process_cpu`); ``unnamed_workers``: the kind charged
    for its worker processes that bear none of our names.

    The run gets a process group of its own, killed whole when it ends or
    this script is stopped: upstream's workers outlive a failed run (and
    ignore SIGTERM), and would load the machine for the systems after it.
    """
    process = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        with process_cpu.ProcessSampler(process.pid, unnamed_workers=unnamed_workers) as sampler:
            stdout, stderr = process.communicate()
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:  # nothing of the run is left
            pass
    return subprocess.CompletedProcess(cmd, process.returncode, stdout, stderr), sampler


def where_the_cpu_went(
    sampler: process_cpu.ProcessSampler, start: float, end: float, steps: float
) -> Dict[str, Any]:
    """``cpu`` (CPU per env step by kind of process, the machine's idle
    share) and ``memory`` (USS/PSS by kind) over the steady window."""
    return dict(
        cpu=process_cpu.window_costs(sampler.snapshots, start, end, steps),
        memory=process_cpu.memory_in_window(sampler.memory, start, end),
    )


def describe_workload(
    config: str, overrides: List[str], appo_worker_per_env: bool = False
) -> Dict[str, Any]:
    """The composed config's envs, T, scenarios and stragglers (and their limit)."""
    from habitat_ver.config.compose import get_config

    cfg = get_config(config, overrides)
    baselines = cfg.habitat_baselines
    embedded = baselines.get("embedded_env")
    straggler = embedded.straggler if embedded is not None else None
    envs = int(baselines.num_environments)
    info: Dict[str, Any] = dict(
        config=config,
        envs=envs,
        num_steps=int(baselines.rl.ppo.num_steps),
        ppo_epoch=int(baselines.rl.ppo.ppo_epoch),
        gym_ids=list(embedded.scenarios) if embedded is not None and embedded.scenarios else [],
        appo_workers_per_env=appo_worker_per_env,
        straggler=None,
    )
    info["gym_ids"] = info["gym_ids"] or [cfg.habitat.env_task_gym_id]
    info["resolution"] = list(embedded.resolution) if embedded is not None else None
    info["frame_skip"] = int(embedded.frame_skip) if embedded is not None else None
    if straggler is not None and straggler.enabled:
        waits = wait_bound.mean_waits(straggler, envs)
        from omegaconf import OmegaConf

        info["straggler"] = OmegaConf.to_container(straggler)
        info["mean_waits_s"] = waits
        info["limit_sps"] = wait_bound.wait_bound_limit(waits)
    return info


def run_workload(name: str, config: str, args: argparse.Namespace, report: Dict) -> None:
    """Every system of ``args.variants`` on one workload, into ``report``."""
    if name == "pointnav_mixed":
        if not (ROOT / HAB_APARTMENT).exists():
            sys.exit(
                f"{HAB_APARTMENT} is missing: python -m habitat_ver.tools.make_hab_dataset "
                "--assets ../shared/habitat-data (docs/HAB.md)"
            )
        ensure_pointnav_dataset(args.stages_dir, options=MIXED_DATASET, name=MIXED_NAME)
    elif config.startswith("pointnav/"):
        ensure_pointnav_dataset(args.stages_dir)
    overrides = WORKLOAD_OVERRIDES.get(name, []) + settings_overrides(args)
    info = describe_workload(config, overrides, config in APPO_WORKER_PER_ENV)
    if info.get("straggler") and args.limit_check_seconds > 0:
        info["limit_check"] = wait_bound.measured_limit(
            SimpleNamespace(**info["straggler"]), info["envs"], args.limit_check_seconds
        )
    if (info.get("straggler") or name in CEILING_WORKLOADS) and args.limit_check_seconds > 0:
        info["env_ceiling"] = wait_bound.env_ceiling(config, overrides, args.limit_check_seconds)
        info["inference_ceiling"] = wait_bound.env_ceiling(
            config, overrides, args.limit_check_seconds, with_inference=True
        )
    entry: Dict[str, Any] = dict(workload=info, results={})
    report["workloads"][name] = entry
    out = Path(args.out)
    for variant in args.variants:
        print(f"[{time.strftime('%H:%M:%S')}] {name}: {variant} ...", flush=True)
        extra = appo_overrides(info, info["envs"]) if variant == "appo" else []
        if variant == SAMPLE_FACTORY:
            result = sps_report.run_sample_factory(args, info)
        else:
            result = run_variant(
                config,
                overrides + VARIANTS[variant] + extra,
                launcher=LAUNCHERS.get(variant),
                unnamed_workers=UNNAMED_WORKERS.get(variant, process_cpu.ENV_WORKERS),
            )
        ceiling = info.get("env_ceiling", {}).get("steps_per_s")
        entry["results"][variant] = sps_report.with_limit(
            result,
            info.get("limit_sps"),
            ceiling,
            info.get("inference_ceiling", {}).get("steps_per_s"),
        )
        entry["ratios"] = sps_report.ratios(entry["results"])
        entry["targets"] = sps_report.targets(
            entry["results"], info.get("limit_sps"), ceiling, workload=name
        )
        # Written after every system, so an interrupted run keeps what it measured.
        sps_report.write_json(report, out)
    if info.get("env_ceiling"):
        # Measured again: the systems' targets use the first reading, and a
        # machine whose load changed during the run shows it here.
        info["env_ceiling_after"] = wait_bound.env_ceiling(
            config, overrides, args.limit_check_seconds
        )
        sps_report.write_json(report, out)
    sps_report.print_table(name, entry)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="one config instead of the named workloads")
    parser.add_argument(
        "--workloads", nargs="+", default=DEFAULT_WORKLOADS, choices=list(WORKLOADS)
    )
    parser.add_argument("--steps", type=int, default=40000, help="env steps per system")
    parser.add_argument("--envs", type=int, default=None, help="envs (default: the config's)")
    parser.add_argument(
        "--num-steps", type=int, default=None, help="rollout length T (default: the config's)"
    )
    systems = list(VARIANTS) + [SAMPLE_FACTORY]
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=systems)
    parser.add_argument(
        "--sf-python",
        default=None,
        type=appo_vs_sample_factory.sf_python,
        help="python of a Sample Factory venv (docs/APPO.md): adds sample_factory to the systems",
    )
    parser.add_argument("--sf-timeout", type=float, default=1800.0)
    parser.add_argument(
        "--limit-check-seconds",
        type=float,
        default=5.0,
        help="seconds of stepping wrapped no-op envs to check the wait-bound limit, then the "
        "workload's own envs without a policy (its env ceiling; also on the pick workload; "
        "0: skip both)",
    )
    parser.add_argument(
        "--stages-dir",
        default=None,
        help="habitat-sim's test stages, for the pointnav dataset "
        "(default: the generator's, ../shared/habitat-sim/...)",
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/trainer_sps.json"))
    args = parser.parse_args(argv)
    if args.sf_python and SAMPLE_FACTORY not in args.variants:
        args.variants.append(SAMPLE_FACTORY)
    return args


def main() -> None:
    # A stop (timeout, kill) ends the running system's processes too (run_sampled).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    args = parse_args()
    configs = (
        {args.config: args.config} if args.config else {w: WORKLOADS[w] for w in args.workloads}
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report: Dict[str, Any] = dict(
        git_sha=sps_report.git_sha(),
        machine=platform.platform(),
        cpus=os.cpu_count(),
        settings={k: v for k, v in vars(args).items() if k != "sf_python"},
        load_before=os.getloadavg(),
        started=time.strftime("%Y-%m-%d %H:%M:%S"),
        workloads={},
    )
    for name, config in configs.items():
        run_workload(name, config, args, report)
    report["load_after"] = os.getloadavg()
    sps_report.write_json(report, out)
    print(
        f"load average (1, 5, 15 min): before {report['load_before']}, after {report['load_after']}"
    )
    print(f"json: {out}")
    sps_report.plot(report, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
