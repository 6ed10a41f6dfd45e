"""One PNG per steps/s workload, drawn from its records: steady steps/s per
system above, the CPU milliseconds per env step by kind of process below."""

from pathlib import Path
from typing import Any, Dict, List

import records
from tables import OTHER_KINDS, SYSTEM_NAMES, TRAINER_KINDS, WORKER_KINDS, cpu_sum, lost

Record = Dict[str, Any]
PARTS = (("trainer", TRAINER_KINDS), ("env workers", WORKER_KINDS), ("other", OTHER_KINDS))


def seed_mean(system: Dict[str, Any]) -> Dict[str, Any]:
    """A system run with several seeds as one: mean steps/s and mean CPU per
    step of each kind over its seeds (a system without seeds as it is)."""
    runs = [r for r in system.get("seeds", {}).values() if r.get("steps_per_s")]
    if not runs:
        return system
    kinds = {k for r in runs for k in (r.get("cpu_ms_per_step") or {})}
    cpu = {k: sum((r.get("cpu_ms_per_step") or {}).get(k, 0.0) for r in runs) for k in kinds}
    return {
        "steps_per_s": sum(r["steps_per_s"] for r in runs) / len(runs),
        "cpu_ms_per_step": {k: v / len(runs) for k, v in cpu.items()},
    }


def _bars(all_records: List[Record], workload: str, **settings: Any) -> List[Dict[str, Any]]:
    """(system label, steps/s, CPU per part) of each system's newest run."""
    bars = []
    chosen = records.newest_per_system(records.of_workload(all_records, workload, **settings))
    for record in chosen:
        for name, system in record["systems"].items():
            system = seed_mean(system)
            if "steps_per_s" not in system:
                continue
            label = SYSTEM_NAMES.get(name, name).replace("`", "")
            bars.append(
                dict(
                    label=label + ("\n(lost a worker)" if lost(system) else ""),
                    sps=system["steps_per_s"],
                    cpu=[cpu_sum(system, kinds) for _, kinds in PARTS],
                )
            )
    return bars


def sps_png(all_records: List[Record], workload: str, title: str, path: Path, **settings: Any):
    """Draw ``workload``'s steps/s and CPU per step into ``path``; False if it
    has no record."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    bars = _bars(all_records, workload, **settings)
    if not bars:
        return False
    figure = Figure(figsize=(1.2 + 0.9 * len(bars), 6), tight_layout=True)
    top, bottom = figure.subplots(2, 1, sharex=True)
    xs = list(range(len(bars)))
    top.bar(xs, [b["sps"] for b in bars], color="C0")
    for x, b in zip(xs, bars):
        top.text(x, b["sps"], f"{b['sps']:.0f}", ha="center", va="bottom", fontsize=8)
    limit = records.of_workload(all_records, workload, **settings)[-1]["metrics"].get("limit_sps")
    if limit:
        top.axhline(limit, color="k", linestyle="--", linewidth=1, label="wait-bound limit")
        top.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    top.set_ylabel("steady steps/s")
    top.set_title(title, fontsize=10)
    base = [0.0] * len(bars)
    for x, b in zip(xs, bars):
        if b["cpu"][0] is None:
            bottom.text(x, 0.1, "not measured", ha="center", rotation=90, fontsize=7)
    for i, (part, _) in enumerate(PARTS):
        values = [b["cpu"][i] or 0.0 for b in bars]
        bottom.bar(xs, values, bottom=base, color=f"C{i + 1}", label=part)
        base = [a + v for a, v in zip(base, values)]
    bottom.set_ylabel("CPU ms per env step")
    bottom.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    bottom.set_xticks(xs)
    bottom.set_xticklabels([b["label"] for b in bars], rotation=30, ha="right", fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=80, metadata={"Software": None})
    return True


def _newest_curves(all_records: List[Record]) -> List[Record]:
    """The newest skill-learning record with learning curves, per config."""
    newest: Dict[str, Record] = {}
    for record in records.of_workload(all_records, "skill_learning"):
        if not (record.get("metrics") or {}).get("curves"):
            continue
        config = record["settings"]["config"]
        if config not in newest or (record["start"] or "") >= (newest[config]["start"] or ""):
            newest[config] = record
    return [newest[config] for config in sorted(newest)]


def skill_curves_png(all_records: List[Record], path: Path) -> bool:
    """One panel per skill: its training success and episode return against
    env steps, from its newest record with curves (a dotted line where a run
    started from another's weights took over); False if there is none."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    chosen = _newest_curves(all_records)
    if not chosen:
        return False
    columns = min(3, len(chosen))
    rows = (len(chosen) + columns - 1) // columns
    figure = Figure(figsize=(4.2 * columns, 2.8 * rows), tight_layout=True)
    axes = figure.subplots(rows, columns, squeeze=False)
    for ax in axes.flat[len(chosen) :]:
        ax.set_visible(False)
    for ax, record in zip(axes.flat, chosen):
        curves = record["metrics"]["curves"]
        success = curves.get("success") or []
        ax.plot([p[0] / 1e6 for p in success], [p[1] for p in success], color="C0")
        ax.set_ylabel(curves.get("success_metric") or "success", color="C0", fontsize=8)
        ax.set_ylim(bottom=0.0)
        returns = curves.get("return") or []
        twin = ax.twinx()
        twin.plot([p[0] / 1e6 for p in returns], [p[1] for p in returns], "--", color="C1")
        twin.set_ylabel("episode return", color="C1", fontsize=8)
        ax.set_xlabel("env steps (millions)", fontsize=8)
        ax.set_title(record["settings"]["config"].split("/")[-1], fontsize=9)
        started = curves.get("started_from_step")
        if started:
            # A second stage, from the first's weights, with its own settings
            # (hab_skill_learning.py --init-from): its returns differ in scale.
            ax.axvline(started / 1e6, color="grey", linestyle=":", linewidth=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=80, metadata={"Software": None})
    return True
