"""The one result record every benchmark run leaves in ``benchmarks/results/``.

A record is a JSON object:

    format     FORMAT
    workload   a name of ``workloads.WORKLOADS`` ("wait_bound", "pick", ...)
    settings   what was run: config, envs, steps, the script's arguments
    systems    {system: {steps_per_s, collect_s, learn_s, learner_threads,
                cpu_ms_per_step: {kind of process: ms}, cores_used, idle_share,
                memory_uss_mb: {kind: MB}, lost_workers: {kind: count}, ...}}
    metrics    the workload's own figures that are not per system
    commit, machine {platform, cpus}, load {before, after} (1/5/15-min averages),
    quiet      the run had the machine to itself (see :func:`is_quiet`; the
               measured idle share before it in ``load["idle_before"]``)
    start, end "YYYY-mm-dd HH:MM:SS" (end is None where it was not recorded)
    source     "run" or where a record made from an older result came from

Records are read with :func:`load_all`; ``hab_skill_learning.py`` writes its
own JSON, which :mod:`convert` turns into a record as it is read.
"""

import datetime
import json
import math
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional

FORMAT = "habitat-ver-benchmark/1"
RESULTS = Path(__file__).resolve().parent / "results"
Record = Dict[str, Any]


def git_sha() -> str:
    """The checkout's commit, or "unknown" outside a git checkout."""
    try:
        return subprocess.check_output(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, text=True
        ).strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> Dict[str, Any]:
    """This machine, as a record names it."""
    return {"platform": platform.platform(), "cpus": os.cpu_count()}


def now() -> str:
    return datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def is_quiet(load_before: List[float], cpus: int, idle_before: Optional[float] = None) -> bool:
    """Quiet: nothing else used the machine as the run started.  Measured as
    the machine's idle share over a few seconds before it (at least 0.9), or
    where that was not measured (older results), the 1-minute load average
    under half the cores, which also counts a benchmark's own previous run."""
    if idle_before is not None:
        return idle_before >= 0.9
    return bool(load_before) and load_before[0] < 0.5 * cpus


def idle_share(seconds: float = 3.0) -> Optional[float]:
    """The share of all CPUs' time that was idle over the next ``seconds``
    (``/proc/stat``), or None where there is no ``/proc/stat``."""

    def times() -> List[float]:
        with open("/proc/stat") as f:
            values = [float(v) for v in f.readline().split()[1:8]]
        return [values[3] + values[4], sum(values)]  # idle + iowait, all

    try:
        before = times()
        time.sleep(seconds)
        after = times()
    except OSError:
        return None
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else None


def make(workload: str, settings: Dict[str, Any], systems: Dict[str, Any], **fields: Any) -> Record:
    """A record of ``workload``.

    Args:
        workload: a name of ``workloads.WORKLOADS``.
        settings: what was run (config, envs, steps, ...).
        systems: per system, its figures (steps_per_s, cpu_ms_per_step, ...).
        **fields: provenance: commit, machine, load, quiet, start, end, source.

    Returns:
        The record, with every field of the format (None where not given).

    Raises:
        ValueError: a name in ``fields`` is not a field of a record.
    """
    record: Record = {
        "format": FORMAT,
        "workload": workload,
        "settings": settings,
        "systems": systems,
        "metrics": {},
        "commit": None,
        "machine": None,
        "load": {"before": None, "after": None},
        "quiet": None,
        "start": None,
        "end": None,
        "source": "run",
    }
    unknown = set(fields) - set(record)
    if unknown:
        raise ValueError(f"not fields of a record: {sorted(unknown)}")
    record.update(fields)
    return record


def clean(value: Any) -> Any:
    """NaN and inf as null (strict JSON readers reject them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def file_name(record: Record) -> str:
    """``<workload>_<start as YYYYmmdd-HHMMSS>.json``."""
    stamp = (record["start"] or now()).replace("-", "").replace(":", "").replace(" ", "-")
    return f"{record['workload']}_{stamp}.json"


def write(record: Record, folder: Path = RESULTS) -> Path:
    """Write ``record`` into ``folder`` (atomically) and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(record)
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps(clean(record), indent=1, sort_keys=False) + "\n")
    partial.replace(path)
    return path


def load_all(
    folder: Path = RESULTS,
    raw: Optional[Callable[[Dict[str, Any]], Optional[Record]]] = None,
    only: Optional[Iterable[str]] = None,
) -> List[Record]:
    """Every record in ``folder``, oldest first.

    Args:
        folder: where the JSON files are.
        raw: turns a JSON file of another shape into a record, or None to leave
            it out; without it such files are left out.
        only: the file names to read (None: every ``*.json``).

    Returns:
        The records, each with ``file``: its file's name.
    """
    records = []
    names = None if only is None else set(only)
    for path in sorted(folder.glob("*.json")):
        if names is not None and path.name not in names:
            continue
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT:
            data = raw(data) if raw is not None else None
        if data is not None:
            data["file"] = path.name
            records.append(data)
    return sorted(records, key=lambda r: r["start"] or "")


def tracked(folder: Path = RESULTS) -> List[str]:
    """The names of the files in ``folder`` that git tracks: the committed records."""
    out = subprocess.check_output(["git", "ls-files", "--", "."], cwd=folder, text=True)
    return [Path(line).name for line in out.splitlines()]


def of_workload(records: Iterable[Record], workload: str, **settings: Any) -> List[Record]:
    """The records of ``workload`` whose settings hold ``settings``, oldest first."""
    return [
        r
        for r in records
        if r["workload"] == workload and all(r["settings"].get(k) == v for k, v in settings.items())
    ]


def newest_per_system(records: List[Record]) -> List[Record]:
    """The fewest records, newest first, that hold each system's newest
    measurement; each keeps only the systems it is newest for."""
    seen: set = set()
    out = []
    for record in sorted(records, key=lambda r: r["start"] or "", reverse=True):
        systems = {s: v for s, v in record["systems"].items() if s not in seen}
        seen |= set(systems)
        if systems:
            out.append({**record, "systems": systems, "all_systems": record["systems"]})
    return out
