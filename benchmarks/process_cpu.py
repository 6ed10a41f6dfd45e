"""Where a run's CPU goes: CPU-seconds per env step of each kind of process.

A benchmark starts a run as a subprocess; :class:`ProcessSampler` reads, a few
times a second, the cumulative CPU time (``utime + stime``) of that process,
of each of its threads and of every process below it, from ``/proc``, and the
machine's busy and idle time from ``/proc/stat``.  :func:`window_costs` then
charges the CPU spent over the run's steady window (the same updates its
steady steps/s counts) to each kind of process and divides by the env steps
taken there: the figure that tells a worker burning CPU from a machine that is
simply full.  :func:`memory_by_kind` sums unique (USS) and proportional (PSS)
memory by kind from ``/proc/<pid>/smaps_rollup``.

Kinds come from the names our processes and threads give themselves
(``habitat_ver.system.process_names``): the trainer (the run's own process,
less the threads named below), its APPO policy-worker and VER overlap
threads, env workers, APPO rollout workers, the forkserver; a worker's own
children (ViZDoom's engine) count as that worker.  A forkserver
child that has none of our names is charged to the kind the caller says
(upstream ``ddppo``'s are env workers; upstream ``ver``'s, whose env workers
build our named envs, are its inference workers: ``other_workers``);
anything else below the run (the resource tracker) is ``other``.

Linux only; pure reading, no process is touched.  The arithmetic is
unit-tested in ``tests/benchmarks``.
"""

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from habitat_ver.system import process_names
from habitat_ver.system.spare_cores import stat_cpu_seconds as _cpu_seconds

TRAINER = "trainer"
ENV_WORKERS = "env_workers"
OTHER_WORKERS = "other_workers"
# Kind of each name prefix.
KIND_OF_PREFIX = {
    process_names.ENV_WORKER: ENV_WORKERS,
    process_names.ROLLOUT_WORKER: "rollout_workers",
    process_names.FORKSERVER: "forkserver",
    process_names.POLICY_THREAD: "policy_thread",
    process_names.OVERLAP_THREAD: "overlap_thread",
}
# Kinds whose unnamed child processes are part of them.
WORKER_KINDS = (ENV_WORKERS, "rollout_workers", OTHER_WORKERS)
# Order of the kinds in tables and plots.
KINDS = (
    TRAINER,
    "policy_thread",
    "overlap_thread",
    "env_workers",
    "rollout_workers",
    "other_workers",
    "forkserver",
    "other",
)
_FORKSERVER_CMDLINE = "from multiprocessing.forkserver import main"
Readings = Dict[Tuple[str, int], float]  # (kind, pid or tid) -> CPU-seconds


def _stat_fields(path: str) -> Optional[Tuple[str, List[str]]]:
    """``(name, fields after the name)`` of a ``/proc/.../stat`` file, or None
    when the process or thread is gone."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    name = text[text.index("(") + 1 : text.rindex(")")]
    return name, text[text.rindex(")") + 2 :].split()


def kind_of_name(name: str) -> Optional[str]:
    """The kind our processes and threads named ``name`` are, or None."""
    for prefix, kind in KIND_OF_PREFIX.items():
        if name == prefix or name.startswith(prefix + "-"):
            return kind
    return None


def _children_map() -> Dict[int, List[int]]:
    children: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat_fields(f"/proc/{entry}/stat")
            if stat is not None:
                children.setdefault(int(stat[1][1]), []).append(int(entry))
    return children


def _kind_of_process(pid: int, name: str, parent_kind: str, unnamed_workers: str) -> str:
    """A named process's kind; an unnamed one below a worker is part of that
    worker (ViZDoom's engine runs as a child of the env's process), one
    forked by the forkserver is ``unnamed_workers``, and anything else
    ``other``."""
    named = kind_of_name(name)
    if named is not None:
        return named
    if parent_kind in WORKER_KINDS:
        return parent_kind
    if parent_kind == "forkserver":  # its children keep its command line
        return unnamed_workers
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().decode(errors="replace")
    except OSError:
        cmdline = ""
    return "forkserver" if _FORKSERVER_CMDLINE in cmdline else "other"


@dataclass
class Snapshot:
    """One reading: wall time, cumulative CPU-seconds by ``(kind, pid or
    tid)``, and the machine's cumulative busy and total jiffies."""

    wall: float
    cpu: Readings = field(default_factory=dict)
    machine_busy: float = 0.0
    machine_total: float = 0.0


def _machine_times() -> Tuple[float, float]:
    """``(busy, total)`` jiffies of all CPUs since boot (idle and iowait are
    not busy)."""
    with open("/proc/stat") as f:
        values = [float(v) for v in f.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)
    total = sum(values[:8])  # guest time is already inside user time
    return total - idle, total


def _trainer_cpu(root: int, snapshot: Snapshot, named_threads: Readings) -> None:
    """The run's own process: its named threads apart, the rest as trainer.

    A thread's CPU stays in its process's total after the thread exits, so
    a named thread seen before (``named_threads``, updated here) and gone now
    keeps its last reading, and the trainer is not charged with it."""
    total = _stat_fields(f"/proc/{root}/stat")
    if total is None:
        return
    try:
        tids = os.listdir(f"/proc/{root}/task")
    except OSError:
        tids = []
    for tid in tids:
        stat = _stat_fields(f"/proc/{root}/task/{tid}/stat")
        kind = kind_of_name(stat[0]) if stat is not None else None
        if stat is not None and kind is not None:
            named_threads[(kind, int(tid))] = _cpu_seconds(stat[1])
    snapshot.cpu.update(named_threads)
    rest = _cpu_seconds(total[1]) - sum(named_threads.values())
    snapshot.cpu[(TRAINER, root)] = max(rest, 0.0)


def take_snapshot(
    root: int, unnamed_workers: str = OTHER_WORKERS, named_threads: Optional[Readings] = None
) -> Snapshot:
    """CPU of ``root``, its named threads and everything below it, now;
    forkserver children with none of our names count as ``unnamed_workers``.
    ``named_threads``: the root's named threads seen so far (kept by a
    sampler across snapshots, so that one which exited stays counted)."""
    snapshot = Snapshot(wall=time.time())
    snapshot.machine_busy, snapshot.machine_total = _machine_times()
    _trainer_cpu(root, snapshot, {} if named_threads is None else named_threads)
    children = _children_map()
    todo = [(root, TRAINER)]
    while todo:
        parent, parent_kind = todo.pop()
        for pid in children.get(parent, []):
            stat = _stat_fields(f"/proc/{pid}/stat")
            if stat is None:
                continue
            kind = _kind_of_process(pid, stat[0], parent_kind, unnamed_workers)
            snapshot.cpu[(kind, pid)] = _cpu_seconds(stat[1])
            todo.append((pid, kind))
    return snapshot


class ProcessSampler:
    """Snapshots of a run's processes every ``period_s``, in a thread.

    Args:
        root: the run's process id.
        period_s: seconds between snapshots.
        memory_period_s: seconds between memory readings (``smaps_rollup``
            walks each process's page tables: kept rarer).
        unnamed_workers: the kind of forkserver children without our names.
    """

    def __init__(
        self,
        root: int,
        period_s: float = 0.5,
        memory_period_s: float = 5.0,
        unnamed_workers: str = OTHER_WORKERS,
    ):
        self.root = root
        self.unnamed_workers = unnamed_workers
        self.period_s = period_s
        self.memory_period_s = memory_period_s
        self.snapshots: List[Snapshot] = []
        self.memory: List[Tuple[float, Dict[str, Dict[str, float]]]] = []
        self._named_threads: Readings = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="process-sampler", daemon=True)

    def __enter__(self) -> "ProcessSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        next_memory = time.monotonic() + self.memory_period_s
        while not self._stop.is_set():
            snapshot = take_snapshot(self.root, self.unnamed_workers, self._named_threads)
            if snapshot.cpu:
                self.snapshots.append(snapshot)
            if time.monotonic() >= next_memory and snapshot.cpu:
                self.memory.append((time.time(), memory_by_kind(snapshot)))
                next_memory += self.memory_period_s
            self._stop.wait(self.period_s)


def _around(snapshots: List[Snapshot], wall: float) -> Tuple[int, int, float]:
    """Indices of the snapshots just before and just after ``wall``, and how
    far between them ``wall`` lies (0..1)."""
    before = [i for i, s in enumerate(snapshots) if s.wall <= wall]
    after = [i for i, s in enumerate(snapshots) if s.wall >= wall]
    if not before or not after:
        span = f"{snapshots[0].wall:.2f}..{snapshots[-1].wall:.2f}" if snapshots else "none"
        raise ValueError(f"no snapshots around wall time {wall:.2f} (snapshots: {span})")
    a, b = snapshots[before[-1]], snapshots[after[0]]
    share = 0.0 if b.wall == a.wall else (wall - a.wall) / (b.wall - a.wall)
    return before[-1], after[0], share


def _readings_up_to(snapshots: List[Snapshot], index: int) -> Readings:
    """Every process's last reading up to snapshot ``index``: one that is gone
    keeps its last, one not born yet is absent (it had spent nothing)."""
    seen: Readings = {}
    for snapshot in snapshots[: index + 1]:
        seen.update(snapshot.cpu)
    return seen


def _at(
    snapshots: List[Snapshot], wall: float
) -> Tuple[Dict[Tuple[str, int], float], float, float]:
    """Cumulative CPU-seconds of every process, and the machine's busy and
    total jiffies, at ``wall``: linear between the snapshots around it."""
    i, j, share = _around(snapshots, wall)
    a, b = _readings_up_to(snapshots, i), _readings_up_to(snapshots, j)
    cpu = {key: a.get(key, 0.0) + share * (value - a.get(key, 0.0)) for key, value in b.items()}
    first, second = snapshots[i], snapshots[j]
    busy = first.machine_busy + share * (second.machine_busy - first.machine_busy)
    total = first.machine_total + share * (second.machine_total - first.machine_total)
    return cpu, busy, total


def window_costs(
    snapshots: List[Snapshot], start: float, end: float, steps: float
) -> Dict[str, object]:
    """CPU by kind of process over ``[start, end]`` (wall times), per env step.

    Args:
        snapshots: :class:`ProcessSampler` readings of one run, in time order.
        start, end: the steady window's wall times.
        steps: env steps taken between them.

    Returns:
        ``ms_per_step`` ({kind: CPU milliseconds per env step}), ``processes``
        ({kind: processes or threads seen}), ``total_ms_per_step``,
        ``cores_used`` (CPU-seconds of the run per wall second),
        ``machine_idle_share`` (idle share of all cores over the window, this
        run's own use included in the busy part), ``window_s`` and
        ``workers_exited`` ({kind: worker processes seen at the window's
        start and gone at its end}: a run that lost an env worker is
        measured on fewer envs than it names, and must say so).

    Raises:
        ValueError: no snapshots around ``start`` or ``end``, or an empty window.
    """
    if end <= start or steps <= 0:
        raise ValueError(f"empty window: {start}..{end} s, {steps} steps")
    (at_start, busy0, total0), (at_end, busy1, total1) = _at(snapshots, start), _at(snapshots, end)
    spent: Dict[str, float] = {}
    counts: Dict[str, int] = {}
    for key, seconds in at_end.items():
        kind = key[0]
        spent[kind] = spent.get(kind, 0.0) + seconds - at_start.get(key, 0.0)
        counts[kind] = counts.get(kind, 0) + 1
    total = sum(spent.values())
    return dict(
        workers_exited=workers_exited(snapshots, start, end),
        ms_per_step={k: 1000.0 * spent[k] / steps for k in KINDS if k in spent},
        processes={k: counts[k] for k in KINDS if k in counts},
        total_ms_per_step=1000.0 * total / steps,
        cores_used=total / (end - start),
        machine_idle_share=1.0 - (busy1 - busy0) / (total1 - total0) if total1 > total0 else None,
        window_s=end - start,
    )


def workers_exited(snapshots: List[Snapshot], start: float, end: float) -> Dict[str, int]:
    """Worker processes (:data:`WORKER_KINDS`) in the first snapshot at or
    after ``start`` and in none at or after ``end``, counted by kind."""
    first = next((s for s in snapshots if s.wall >= start), None)
    late = [s for s in snapshots if s.wall >= end]
    if first is None or not late:
        return {}
    alive = {key for snapshot in late for key in snapshot.cpu}
    gone: Dict[str, int] = {}
    for key in first.cpu:
        if key[0] in WORKER_KINDS and key not in alive:
            gone[key[0]] = gone.get(key[0], 0) + 1
    return gone


def _smaps_rollup(pid: int) -> Optional[Dict[str, float]]:
    """``{"uss_mb", "pss_mb"}`` of one process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    kb = {}
    for line in lines[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith(":"):
            kb[parts[0][:-1]] = float(parts[1])
    uss = kb.get("Private_Clean", 0.0) + kb.get("Private_Dirty", 0.0)
    return dict(uss_mb=uss / 1024.0, pss_mb=kb.get("Pss", 0.0) / 1024.0)


def memory_by_kind(snapshot: Snapshot) -> Dict[str, Dict[str, float]]:
    """USS and PSS (MB) summed by kind over the processes of ``snapshot``
    (threads share their process's memory: not counted again)."""
    out: Dict[str, Dict[str, float]] = {}
    pids = {pid for kind, pid in snapshot.cpu if not kind.endswith("_thread")}
    for kind, pid in snapshot.cpu:
        if pid not in pids:
            continue
        memory = _smaps_rollup(pid)
        if memory is None:
            continue
        into = out.setdefault(kind, dict(uss_mb=0.0, pss_mb=0.0, processes=0))
        into["uss_mb"] += memory["uss_mb"]
        into["pss_mb"] += memory["pss_mb"]
        into["processes"] += 1
    return out


def memory_in_window(
    readings: List[Tuple[float, Dict[str, Dict[str, float]]]], start: float, end: float
) -> Optional[Dict[str, Dict[str, float]]]:
    """The last memory reading inside ``[start, end]`` (the steady state), or
    the last one before ``end``; None without any."""
    inside = [m for wall, m in readings if start <= wall <= end]
    before = [m for wall, m in readings if wall <= end]
    chosen = inside or before
    return chosen[-1] if chosen else None
