"""The CPU learner's threads: the cores that idle envs leave free.

Under ``habitat_baselines.force_torch_single_threaded`` (upstream's default,
which we also apply on the CPU: :func:`habitat_ver.run.execute_exp`) torch runs
one thread, so that inference and the learner leave the cores to the env
workers.  During a lock-step update (``ddppo``; ``ver`` when it does not
overlap) no env steps, and one thread leaves the other cores idle: measured on
the 2-core machine, the wait-bound workload's update went from 1.30 s to
0.92 s with two threads.  :func:`learner_threads` gives the update this
process's share of the cores and restores one thread afterwards; ``appo`` and
overlapped ``ver`` collect while they learn and keep one.
"""

import contextlib
import os
from typing import Iterator

import torch


def cores_per_process() -> int:
    """This process's share of the cores it may run on: the usable cores over
    the processes of the run on this machine (torchrun's ``LOCAL_WORLD_SIZE``,
    else the world size of an initialised process group, else 1)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    local = os.environ.get("LOCAL_WORLD_SIZE")
    if local is not None:
        processes = int(local)
    elif torch.distributed.is_available() and torch.distributed.is_initialized():
        processes = torch.distributed.get_world_size()
    else:
        processes = 1
    return max(1, (cores or 1) // max(1, processes))


@contextlib.contextmanager
def learner_threads(envs_idle: bool, device: torch.device) -> Iterator[None]:
    """Within the block, a single-threaded CPU learner whose envs are idle
    uses :func:`cores_per_process` threads; elsewhere nothing changes."""
    before = torch.get_num_threads()
    share = cores_per_process()
    if not envs_idle or device.type != "cpu" or before != 1 or share == 1:
        yield
        return
    torch.set_num_threads(share)
    try:
        yield
    finally:
        torch.set_num_threads(before)
