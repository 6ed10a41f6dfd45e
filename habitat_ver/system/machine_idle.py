"""How many cores sat idle over a stretch of wall time, from ``/proc/stat``.

The trainer reads it around each collection: the idle cores while it waited
for its rollout say whether learning could run beside collection without
taking cores from it (``ver``'s ``overlap_rollouts_and_learn: auto``).  The
count is the whole machine's, so another job's load counts as busy: on a
shared machine that is the truth a decision needs.
"""

import os
from typing import Optional, Tuple


def _cpu_jiffies() -> Optional[Tuple[float, float]]:
    """``(idle, total)`` jiffies of all cores since boot (idle and iowait are
    idle), or None where ``/proc/stat`` is missing."""
    try:
        with open("/proc/stat") as f:
            values = [float(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)
    return idle, sum(values[:8])  # guest time is already inside user time


class IdleCores:
    """Idle cores between :meth:`start` and :meth:`stop` (one reading each).

    Args:
        cores: cores on the machine (default: ``os.cpu_count()``).
    """

    def __init__(self, cores: Optional[int] = None):
        self.cores = cores or os.cpu_count() or 1
        self._start: Optional[Tuple[float, float]] = None
        # Idle cores over the last start..stop; None before one, or without /proc.
        self.last: Optional[float] = None

    def start(self) -> None:
        self._start = _cpu_jiffies()

    def stop(self) -> Optional[float]:
        """Idle cores, on average, since :meth:`start` (also kept in :attr:`last`)."""
        end = _cpu_jiffies()
        if self._start is None or end is None or end[1] <= self._start[1]:
            self.last = None
        else:
            idle = (end[0] - self._start[0]) / (end[1] - self._start[1])
            self.last = self.cores * idle
        return self.last
