"""The cores a run left unused while it collected a rollout.

The trainer reads it around each collection (``ver``'s
``overlap_rollouts_and_learn: auto``): the cores of the machine less the CPU
the run itself spent meanwhile -- the trainer process (all its threads), its
env worker processes and their children (ViZDoom's engine) -- per second of
wall time.  Learning beside collection gains where the run leaves cores
unused: envs that wait (rendering or physics elsewhere), or a machine shared
with other jobs, whose scheduler then gives the run a larger share.  Where
the run's own env workers already fill every core, learning beside them only
takes their cores.

Read from ``/proc``; None elsewhere.
"""

import os
import time
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def stat_cpu_seconds(fields: Sequence[str]) -> float:
    """utime + stime from the fields of a ``/proc/.../stat`` line after the
    name (stat's fields 14 and 15 are 12 and 13 there)."""
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _cpu_seconds(pid: int) -> float:
    """utime + stime of one process (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return stat_cpu_seconds(fields)


def children_of(pid: int) -> List[int]:
    """Child processes of ``pid`` (``/proc/<pid>/task/<tid>/children``)."""
    found: List[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                found += [int(child) for child in f.read().split()]
        except OSError:
            continue
    return found


def workers_cpu_seconds(pids: Iterable[int]) -> float:
    """CPU-seconds of the processes ``pids`` and of their children."""
    return sum(_cpu_seconds(pid) + sum(map(_cpu_seconds, children_of(pid))) for pid in pids)


class SpareCores:
    """Cores the run left unused between :meth:`start` and :meth:`stop`.

    Args:
        worker_pids: returns the run's worker processes (read at each start and stop).
        cores: cores of the machine (default: ``os.cpu_count()``).
    """

    def __init__(self, worker_pids: Callable[[], Sequence[int]], cores: Optional[int] = None):
        self._worker_pids = worker_pids
        self.cores = cores or os.cpu_count() or 1
        self._start: Optional[Tuple[float, float]] = None
        # Spare cores over the last start..stop; None before one, or without /proc.
        self.last: Optional[float] = None

    def _reading(self) -> Optional[Tuple[float, float]]:
        if not os.path.isdir("/proc/self/task"):
            return None
        spent = time.process_time() + workers_cpu_seconds(self._worker_pids())
        return time.monotonic(), spent

    def start(self) -> None:
        self._start = self._reading()

    def stop(self) -> Optional[float]:
        """Spare cores, on average, since :meth:`start` (also kept in :attr:`last`)."""
        end = self._reading()
        if self._start is None or end is None or end[0] <= self._start[0]:
            self.last = None
        else:
            used = (end[1] - self._start[1]) / (end[0] - self._start[0])
            self.last = max(self.cores - used, 0.0)
        return self.last
