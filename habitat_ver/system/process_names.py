"""The names the kernel shows for our worker processes and threads.

``ps``, ``top -H`` and ``/proc/<pid>/task/<tid>/comm`` show a thread's kernel
name; a forkserver child otherwise keeps its server's (``python``), so the
env workers of a run could not be told from its other processes.  Each
worker entry point and each of our long-lived threads names itself here;
``benchmarks/process_cpu.py`` reads the names to charge CPU time to each kind
of process.
"""

import ctypes
import sys

# prctl's option that sets the calling thread's name.
_PR_SET_NAME = 15
# The kernel keeps 15 bytes of a name (16 with the terminating NUL).
NAME_LIMIT = 15
# Name prefixes, one per kind of process or thread.
ENV_WORKER = "hv-env"
ROLLOUT_WORKER = "hv-rollout"
FORKSERVER = "hv-forkserver"
POLICY_THREAD = "hv-policy"
OVERLAP_THREAD = "hv-overlap"


def name_this_thread(name: str) -> None:
    """Give the calling thread ``name`` (cut to :data:`NAME_LIMIT` bytes) in
    the kernel; in a process's main thread this is the process's name.  Does
    nothing off Linux."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None)
    libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:NAME_LIMIT]), 0, 0, 0)
