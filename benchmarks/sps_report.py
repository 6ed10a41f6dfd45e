"""What ``benchmarks/trainer_sps.py`` makes of its runs: limit fractions,
ratios, the targets, the table, the plot, and the Sample Factory run."""

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

import convert
import plots
import records
import tables

from habitat_ver.common.atomic import write_atomically

# The ratios reported per workload: (numerator, denominator), steady steps/s.
RATIOS = [
    ("ver", "ddppo"),
    ("nover", "ddppo"),
    ("ver", "nover"),
    ("ver", "upstream_ver"),
    ("ver_overlap", "ver"),
    ("ver_overlap", "upstream_ver"),
    ("ver_auto", "ver"),
    ("appo", "ver"),
    ("appo", "sample_factory"),
    ("upstream_ver", "upstream_ddppo"),
]
VER_SETTINGS = ("ver", "ver_overlap", "ver_auto")


git_sha = records.git_sha


def to_json(report: Dict[str, Any]) -> str:
    """JSON with NaN/inf written as null (strict JSON readers reject them)."""
    return json.dumps(records.clean(report), indent=2)


# A steady rate this far above the wait-bound limit cannot come from the
# workload's envs (upstream ver's bare envs once did 1.21x).
OVER_LIMIT = 1.05


def write_json(report: Dict[str, Any], path: Path) -> None:
    """:func:`to_json` of ``report`` into ``path``, atomically: a reader never
    sees half a file."""
    data = to_json(report).encode()
    write_atomically(str(path), lambda f: f.write(data))


def with_limit(
    result: Dict[str, Any],
    limit: Optional[float],
    ceiling: Optional[float] = None,
    inference_ceiling: Optional[float] = None,
) -> Dict[str, Any]:
    """``result`` plus its steady and collection-only rates as fractions of
    ``limit`` (and the collection rate as a fraction of the env ``ceiling``
    and of the ``inference_ceiling``, see :func:`wait_bound.env_ceiling`)."""
    if limit is None or "steady_sps" not in result:
        return result
    out = dict(result, limit_fraction=result["steady_sps"] / limit)
    if ceiling and result.get("collect_sps"):
        out["collect_ceiling_fraction"] = result["collect_sps"] / ceiling
    if inference_ceiling and result.get("collect_sps"):
        out["collect_inference_ceiling_fraction"] = result["collect_sps"] / inference_ceiling
    if ceiling and result.get("collect_share") is not None:
        out["ceiling_x_collect_share"] = ceiling * result["collect_share"]
    if result["steady_sps"] > OVER_LIMIT * limit:
        # Faster than envs that never wait for an action: not these envs.
        out["over_limit"] = True
    if result.get("collect_sps"):
        out["collect_limit_fraction"] = result["collect_sps"] / limit
    if result.get("collect_share") is not None:
        # The rate this system would reach if collection ran at the limit.
        out["limit_x_collect_share"] = limit * result["collect_share"]
    return out


def _steady(results: Dict[str, Dict[str, Any]], name: str) -> Optional[float]:
    """A system's steady steps/s for ratios and targets; None where it did not
    run, or where worker processes exited in its window (measured on fewer
    envs than it names, it compares with nothing)."""
    result = results.get(name, {})
    if (result.get("cpu") or {}).get("workers_exited"):
        return None
    return result.get("steady_sps")


def ratios(results: Dict[str, Dict[str, Any]]) -> Dict[str, float]:
    """``a/b`` of steady steps/s for each pair of :data:`RATIOS` that both ran."""
    out = {}
    for a, b in RATIOS:
        sa, sb = _steady(results, a), _steady(results, b)
        if sa and sb:
            out[f"{a}/{b}"] = sa / sb
    return out


# The targets on the real simulator, by workload: (system, factor, reference
# system): steps/s at least factor x the reference's.
SIM_TARGETS = {
    "pointnav": [("ver", 1.05, "ddppo"), ("ver", 1.5, "upstream_ver")],
    "pointnav_mixed": [("ver", 1.3, "ddppo")],
    "pick": [("ver", 1.2, "ddppo")],
}
# And on each of them, ``ver``'s CPU per env step of a kind of process at most
# factor x ``ddppo``'s (the same work: a process that spends more is a defect).
SIM_CPU_TARGETS = [("env_workers", 1.1), ("trainer", 1.5)]


def _cpu_per_step(results: Dict[str, Dict[str, Any]], system: str, kind: str) -> Optional[float]:
    cpu = results.get(system, {}).get("cpu") or {}
    value = cpu.get("ms_per_step", {}).get(kind)
    return float(value) if value else None


def _best_ver(results: Dict[str, Dict[str, Any]]) -> Optional[float]:
    ran = [s for n in VER_SETTINGS if (s := _steady(results, n))]
    return max(ran) if ran else None


def targets(
    results: Dict[str, Dict[str, Any]],
    limit: Optional[float],
    ceiling: Optional[float] = None,
    workload: Optional[str] = None,
) -> Dict[str, Any]:
    """The targets on what ran: ``{target: [value, bound, met]}``; for a
    workload of :data:`SIM_TARGETS` those and :data:`SIM_CPU_TARGETS`,
    otherwise the wait-bound ones of VER's regime.

    The limit is the sum over envs of 1 / mean step time.
    Two readings of it are checked side by side: ``limit``, the wait-only
    formula (Doom's own step counted as free), and ``ceiling``, the envs'
    measured rate when answered at once (their whole step: Doom, the wait and
    ``time.sleep``'s overshoot); the limit-based targets are checked against
    each that is given.
    """
    out: Dict[str, Any] = {}

    def check(name: str, value: Optional[float], bound: Optional[float]) -> None:
        if value is not None and bound is not None:
            out[name] = [value, bound, value >= bound]

    if workload in SIM_TARGETS:
        for system, factor, reference in SIM_TARGETS[workload]:
            bound = _steady(results, reference)
            check(
                f"{system} >= {factor}x {reference}",
                _steady(results, system),
                factor * bound if bound else None,
            )
        for kind, factor in SIM_CPU_TARGETS:
            value, peer = _cpu_per_step(results, "ver", kind), _cpu_per_step(results, "ddppo", kind)
            if value is not None and peer is not None:
                name = f"ver {kind} CPU per step <= {factor}x ddppo's"
                out[name] = [value, factor * peer, value <= factor * peer]
        return out
    ver, ddppo = _steady(results, "ver"), _steady(results, "ddppo")
    check("ver >= 2.5x ddppo", ver, 2.5 * ddppo if ddppo else None)
    best = _best_ver(results)
    collect = results.get("ver", {}).get("collect_sps")
    for name, bound, share_key in (
        ("limit", limit, "limit_x_collect_share"),
        ("env ceiling", ceiling, "ceiling_x_collect_share"),
    ):
        share = results.get("ver", {}).get(share_key)
        check(f"ver >= 0.9 x {name} x collection share", ver, 0.9 * share if share else None)
        if bound is not None:
            check(f"best ver >= 0.85 x {name}", best, 0.85 * bound)
            check(f"ver collection alone >= 0.95 x {name}", collect, 0.95 * bound)
    upstream = _steady(results, "upstream_ver")
    check("best ver >= 1.2x upstream ver", best, 1.2 * upstream if upstream else None)
    check("appo >= ver", _steady(results, "appo"), ver)
    return out


def _fmt(value: Optional[float], spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(name: str, entry: Dict[str, Any]) -> None:
    """A workload's settings, limit and ceilings, failed or impossible systems,
    then its record's table (:func:`print_cpu_table`), ratios and targets."""
    info, results = entry["workload"], entry["results"]
    limit = info.get("limit_sps")
    print(
        f"\n{name} ({info['config']}): {info['envs']} envs, T={info['num_steps']}, "
        f"{info['ppo_epoch']} epochs; wait-bound limit {_fmt(limit, '.1f')} steps/s"
    )
    if info.get("limit_check"):
        check = info["limit_check"]
        print(
            f"  limit check (no-op envs, sleep only): {check['steps_per_s']:.1f} steps/s, "
            f"slept/drawn share {check['delay_share']:.3f}"
        )
    if info.get("env_ceiling"):
        ceiling = info["env_ceiling"]["steps_per_s"]
        of_limit = f" ({ceiling / limit:.3f} of the limit)" if limit else ""
        print(f"  env ceiling (the workload's envs, no policy): {ceiling:.1f} steps/s{of_limit}")
    if info.get("inference_ceiling"):
        inference = info["inference_ceiling"]
        print(
            f"  inference ceiling (the same envs answered by the policy, no storage): "
            f"{inference['steps_per_s']:.1f} steps/s, {inference['envs_per_batch']:.2f} envs "
            f"per batch"
        )
    if info.get("env_ceiling_after"):
        print(f"  env ceiling after every system: {info['env_ceiling_after']['steps_per_s']:.1f}")
    for system, res in results.items():
        if "steady_sps" not in res:
            print(f"{system:16s} failed: {res.get('error')}")
        elif res.get("over_limit"):
            print(f"  {system}: ABOVE the wait-bound limit, so not on this workload's envs")
    print_cpu_table(name, entry)
    for pair, value in entry.get("ratios", {}).items():
        print(f"  {pair}: {value:.2f}x")
    for target, (value, bound, met) in entry.get("targets", {}).items():
        print(f"  target {target}: {value:.1f} vs {bound:.1f} {'met' if met else 'NOT met'}")


def cpu_line(cpu: Optional[Dict]) -> str:
    """One line: a run's CPU ms per env step by kind of process
    (:func:`process_cpu.window_costs`), its cores in use and the machine's
    idle share."""
    if not cpu:
        return "CPU: not sampled"
    if "error" in cpu:
        return f"CPU: not measured ({cpu['error']})"
    kinds = ", ".join(f"{kind} {ms:.2f}" for kind, ms in cpu["ms_per_step"].items())
    idle = cpu["machine_idle_share"]
    exited = ", ".join(f"{n} {kind}" for kind, n in cpu.get("workers_exited", {}).items())
    return (
        f"CPU ms per env step: {kinds} (steady {cpu['window_s']:.0f} s, "
        f"{cpu['cores_used']:.2f} cores used"
        + ("" if idle is None else f", machine {idle:.0%} idle")
        + ")"
        + (f"; EXITED DURING THE WINDOW: {exited}" if exited else "")
    )


def print_cpu_table(name: str, entry: Dict[str, Any]) -> None:
    """The workload's systems as the docs show them: steps/s, ratios, CPU per
    step by kind of process, cores used, idle share (its record's table)."""
    (made,) = convert.from_trainer_sps({"workloads": {name: entry}})
    print(tables.sps_table([made], made["workload"]))


def plot(report: Dict[str, Any], path: Path) -> None:
    """One picture per workload (``<path stem>_<workload>.png``): steady
    steps/s and CPU per env step of every system, as the docs draw them."""
    for made in convert.from_trainer_sps(report):
        where = path.with_name(f"{path.stem}_{made['workload']}.png")
        if plots.sps_png([made], made["workload"], made["settings"]["config"], where):
            print(f"plot: {where}")


def run_sample_factory(args: argparse.Namespace, info: Dict[str, Any]) -> Dict[str, Any]:
    """Sample Factory's APPO on the workload's env (our DoomEnv, scenarios and
    straggler wrapper, loaded by file path in its venv; appo_vs_sample_factory.py)."""
    import appo_vs_sample_factory as sf

    if not args.sf_python:
        return {"error": ["no --sf-python given"]}
    if any(not g.startswith("habitat_ver/Doom") for g in info["gym_ids"]):
        return {"error": [f"Sample Factory runs our Doom envs only, not {info['gym_ids']}"]}
    per_env = bool(info["appo_workers_per_env"])
    envs = info["envs"]
    spec = dict(gym_ids=info["gym_ids"], straggler=info.get("straggler"))
    settings = argparse.Namespace(
        sf_python=args.sf_python,
        steps=args.steps,
        num_envs=envs,
        num_workers=envs if per_env else 2,
        worker_num_splits=1 if per_env else 2,
        rollout=info["num_steps"],
        batch_trajectories=envs if per_env else 8,
        epochs=info["ppo_epoch"],
        frame_skip=info["frame_skip"],
        resolution=info["resolution"],
        sf_timeout=args.sf_timeout,
        env_spec=json.dumps(spec),
    )
    with tempfile.TemporaryDirectory() as work:
        result = sf._run_sf(settings, Path(work))
    if not result.get("ok"):
        return {"error": result.get("error", "").splitlines()[-5:]}
    return dict(
        steady_sps=result["sps_steady"],
        mean_sps=result["sps_whole_run"],
        steps=result["steps"],
        wall_s=result["wall_s"],
        split_from="Sample Factory logs no per-update collection/learning seconds",
    )
