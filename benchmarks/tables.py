"""Markdown tables of the steps/s workloads, rendered from records.

Every figure comes from a record; a cell the record does not hold is blank.
A table holds each system's newest measurement and names the run it is from.
"""

from typing import Any, Dict, List, Optional, Sequence

import records

Record = Dict[str, Any]
# How a system is written in the docs.
SYSTEM_NAMES = {
    "ddppo": "`ddppo`",
    "ver": "`ver`",
    "nover": "NoVER",
    "ver_overlap": "`ver` + overlap",
    "ver_auto": "`ver` + `auto`",
    "ver_threads2": "`ver`, 2 learner threads",
    "appo": "`appo`",
    "upstream_ddppo": "upstream `ddppo`",
    "upstream_ver": "upstream `ver`",
    "sample_factory": "Sample Factory",
}
# Kinds of process (benchmarks/process_cpu.py) in the CPU columns.
TRAINER_KINDS = ("trainer", "policy_thread", "overlap_thread")
WORKER_KINDS = ("env_workers", "rollout_workers")
OTHER_KINDS = ("other_workers", "forkserver", "other")


def num(value: Optional[float], spec: str = ".1f") -> str:
    """``value`` formatted, or blank where it was not measured."""
    return "" if value is None else format(value, spec)


def row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = [row(header), "|" + "---|" * len(header)]
    return "\n".join(lines + [row(r) for r in rows]) + "\n"


def run_label(record: Record) -> str:
    """``2026-11-27 15:23, ca720a0, quiet``: when, what code, how loaded."""
    when = (record["start"] or "")[:16]
    commit = (record["commit"] or "?")[:7]
    quiet = {True: "quiet", False: "loaded", None: ""}[record["quiet"]]
    return ", ".join(x for x in (when, commit, quiet) if x)


def cpu_sum(system: Dict[str, Any], kinds: Sequence[str]) -> Optional[float]:
    """CPU ms per step of ``kinds`` together, or None if not measured."""
    cpu = system.get("cpu_ms_per_step") or {}
    if not any(k in cpu for k in kinds):
        return None
    return sum(cpu.get(k) or 0.0 for k in kinds)


def lost(system: Dict[str, Any]) -> bool:
    """A worker process exited during the run's window: not the envs' rate."""
    return any((system.get("lost_workers") or {}).values())


def ratio(record: Record, system: str, to: str = "ddppo") -> Optional[float]:
    """Steps/s of ``system`` over ``to``'s, both from one run; None if either
    is missing or lost a worker."""
    everything = record.get("all_systems", record["systems"])
    a, b = everything.get(system), everything.get(to)
    if not a or not b or lost(a) or lost(b) or "steps_per_s" not in b:
        return None
    return a["steps_per_s"] / b["steps_per_s"]


def _collect_learn(system: Dict[str, Any]) -> str:
    learn = num(system.get("learn_s"), ".2f")
    if system.get("overlapped"):
        return f"overlapped / {learn}"
    collect = num(system.get("collect_s"), ".2f") or "-"
    return f"{collect} / {learn}" if learn else ""


def sps_rows(record: Record, limit: Optional[float]) -> List[List[str]]:
    """One row per system of ``record``."""
    out = []
    for name, system in record["systems"].items():
        if "steps_per_s" not in system:
            continue
        label = SYSTEM_NAMES.get(name, name) + (" (lost a worker)" if lost(system) else "")
        sps = system["steps_per_s"]
        idle = system.get("idle_share")
        cells = [label, num(sps)]
        cells += [num(sps / limit, ".2f")] if limit else []
        cells += [num(ratio(record, name), ".2f"), _collect_learn(system)]
        cells += [num(cpu_sum(system, k), ".2f") for k in (TRAINER_KINDS, WORKER_KINDS)]
        cells += [num(cpu_sum(system, OTHER_KINDS), ".2f")]
        cells += [num(system.get("cores_used"), ".2f"), num(idle and 100 * idle, ".0f")]
        out.append(cells + [run_label(record)])
    return out


SPS_HEADER = ["system", "steps/s", "vs `ddppo`", "collect / learn s per update"]
SPS_HEADER += ["CPU ms/step: trainer", "env workers", "other", "cores used", "idle %", "run"]


def sps_table(all_records: List[Record], workload: str, **settings: Any) -> str:
    """Steady steps/s and CPU per env step of every system on ``workload``
    (records whose settings hold ``settings``), each from its newest run."""
    chosen = records.newest_per_system(records.of_workload(all_records, workload, **settings))
    if not chosen:
        return "No record of this workload yet.\n"
    limit = chosen[0]["metrics"].get("limit_sps")
    header = SPS_HEADER[:2] + (["of limit"] if limit else []) + SPS_HEADER[2:]
    rows = [r for record in chosen for r in sps_rows(record, limit)]
    return table(header, rows)


def _newest_with(
    all_records: List[Record], workload: str, systems: Sequence[str]
) -> Optional[Record]:
    found = [
        r
        for r in records.of_workload(all_records, workload)
        if all("steps_per_s" in r["systems"].get(s, {}) for s in systems)
    ]
    return found[-1] if found else None


def _ratio_cell(record: Record, systems: Sequence[str]) -> str:
    best = max(systems, key=lambda s: ratio(record, s) or 0.0)
    value = ratio(record, best)
    return "" if value is None else f"{value:.2f}x ({SYSTEM_NAMES.get(best, best)})"


SUMMARY_WORKLOADS = ("wait_bound", "doom_a", "doom_b", "pointnav", "pointnav_mixed", "pick")
VER_STYLE = ("ver", "nover", "ver_overlap", "ver_auto", "ver_threads2", "appo")


def _cpu_ratio(record: Record, kinds: Sequence[str]) -> Optional[float]:
    a = cpu_sum(record["systems"]["ver"], kinds)
    b = cpu_sum(record["systems"]["ddppo"], kinds)
    return a / b if a and b else None


def summary_table(all_records: List[Record], titles: Dict[str, str]) -> str:
    """Per workload, from its newest run with ``ver`` and ``ddppo``: ``ver``
    over ``ddppo``, the fastest VER-style system over ``ddppo``, ``ver`` over
    upstream's ``ver``, and ``ver``'s CPU per env step over ``ddppo``'s (env
    workers, trainer)."""
    rows = []
    for workload in SUMMARY_WORKLOADS:
        record = _newest_with(all_records, workload, ("ver", "ddppo"))
        if record is None:
            continue
        present = [s for s in VER_STYLE if s in record["systems"]]
        rows.append(
            [
                titles[workload],
                num(ratio(record, "ver"), ".2f"),
                _ratio_cell(record, present),
                num(ratio(record, "ver", "upstream_ver"), ".2f"),
                num(_cpu_ratio(record, WORKER_KINDS), ".2f"),
                num(_cpu_ratio(record, TRAINER_KINDS), ".2f"),
                run_label(record),
            ]
        )
    header = ["workload", "`ver` / `ddppo`", "fastest / `ddppo`", "`ver` / upstream `ver`"]
    header += ["CPU per step: env workers", "trainer", "run"]
    return table(header, rows)


def compact_sps_table(all_records: List[Record], workload: str) -> str:
    """Steps/s, share of the wait-bound limit and ratio to ``ddppo`` of every
    system on ``workload``, each from its newest run."""
    chosen = records.newest_per_system(records.of_workload(all_records, workload))
    if not chosen:
        return "No record of this workload yet.\n"
    limit = chosen[0]["metrics"].get("limit_sps")
    rows = []
    for record in chosen:
        for name, system in record["systems"].items():
            if "steps_per_s" in system:
                sps = system["steps_per_s"]
                cells = [SYSTEM_NAMES.get(name, name), num(sps)]
                cells += [num(sps / limit, ".2f")] if limit else []
                rows.append(cells + [num(ratio(record, name), ".2f"), run_label(record)])
    header = ["system", "steps/s"] + (["of limit"] if limit else []) + ["vs `ddppo`", "run"]
    return table(header, rows)


# ranks_vs_envs.py: its workloads and layouts (ranks x envs per rank) as the docs write them.
RANKS_TASKS = {"pointnav": "PointNav", "pick": "pick, CPU profile"}
ONE_RANK = "1x4"


def _load_cell(record: Record) -> str:
    load = record.get("load") or {}
    before, after = load.get("before"), load.get("after")
    if not before or not after:
        return ""
    return f"{before[0]:.1f} / {after[0]:.1f}"


def ranks_row(record: Record, name: str, system: Dict[str, Any]) -> List[str]:
    """One layout of one workload: steps/s over all ranks, its ratio to the
    one-rank layout of the same run, CPU ms per env step of the ranks, env
    workers, the rest and all together, cores used, wall time, load."""
    task, layout = name.split("/")
    cpu = system.get("cpu_ms_per_step") or {}
    lost_one = " (lost a worker)" if lost(system) else ""
    return [
        RANKS_TASKS.get(task, task),
        f"{system['ranks']} x {system['envs_per_rank']}{lost_one}",
        num(system["steps_per_s"]),
        num(ratio(record, name, f"{task}/{ONE_RANK}"), ".2f"),
        num(cpu_sum(system, TRAINER_KINDS), ".2f"),
        num(cpu_sum(system, WORKER_KINDS), ".2f"),
        num(cpu_sum(system, OTHER_KINDS), ".2f"),
        num(sum(cpu.values()) if cpu else None, ".2f"),
        num(system.get("cores_used"), ".2f"),
        num(system.get("wall_s"), ".0f"),
        _load_cell(record),
        run_label(record),
    ]


RANKS_HEADER = ["workload", "ranks x envs", "steps/s", "vs 1 x 4", "CPU ms/step: ranks"]
RANKS_HEADER += ["env workers", "other", "all", "cores used", "wall s", "load before / after"]


def ranks_table(all_records: List[Record]) -> str:
    """Each workload and layout of ``ranks_vs_envs``, from its newest run."""
    chosen = records.newest_per_system(records.of_workload(all_records, "ranks_vs_envs"))
    rows: List[Sequence[str]] = [
        ranks_row(record, name, system)
        for record in chosen
        for name, system in record["systems"].items()
        if "steps_per_s" in system
    ]
    if not rows:
        return "No record of this workload yet.\n"
    return table(RANKS_HEADER + ["run"], rows)
