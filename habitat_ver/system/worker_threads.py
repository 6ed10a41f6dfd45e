"""Every process we start that does not learn runs torch on one thread.

torch sizes its intra-op OpenMP pool from the cores (or ``OMP_NUM_THREADS``).
An env worker's hot path is one tensor copy per step: the observation into
its shared row.  A 128x128 RGB frame (49,152 elements) is above torch's
parallel grain, so each copy wakes the pool, whose threads then spin for a
while after it: a worker that copies a frame and then waits for its render
spends many times the CPU of the copy, taken from inference and learning
(docs/BENCHMARKS.md, "Where the CPU goes").

So every worker entry point calls :func:`use_one_thread` first, and so does
the forkserver that forks them (:mod:`habitat_ver.system.forkserver_preload`),
whatever the user's environment asks for.  Learners keep their threads: the
trainer decides those (``habitat_baselines.learner.num_threads``).
"""

import os

import torch

# Read by OpenMP and BLAS libraries when a process loads them: processes
# that a worker starts (and libraries it loads later) get one thread too.
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def use_one_thread() -> None:
    """Run torch's intra-op work on this thread alone, and say so to the
    libraries and processes that start after this call."""
    for name in THREAD_ENV_VARS:
        os.environ[name] = "1"
    torch.set_num_threads(1)
