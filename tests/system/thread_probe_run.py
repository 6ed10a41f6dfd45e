"""Run by test_worker_threads.py in a fresh interpreter (not collected).

Starts every kind of worker process we have, each stepping a
:class:`ThreadProbeEnv`, and prints one JSON line: per kind, the ``probe``
(torch threads, OS threads) each env saw at its first and its last step.
Also the torch threads of a bare child of the forkserver (which calls no
worker entry point), and of this process before and after all that: the
trainer is left alone.
"""

import json
import os

import torch

import habitat_ver  # noqa: F401
from habitat_ver.system.grouped_pool import GroupedPool
from habitat_ver.system.stop_signals import worker_context
from habitat_ver.system.lockstep_pool import LockstepPool
from habitat_ver.system.per_env_pool import PerEnvPool

from thread_probe_envs import ThreadProbeEnv  # copied beside this script

STEPS = 6
# Before any worker starts.
THREADS_AT_START = torch.get_num_threads()


def probes(observations):
    return [[int(v) for v in obs["probe"]] for obs in observations]


def names_below(root=None):
    """Kernel names of every process below ``root`` (this one by default)."""
    root = os.getpid() if root is None else root
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        parent = int(text[text.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append((int(entry), name))
    found, todo = [], [root]
    while todo:
        for pid, name in children.get(todo.pop(), []):
            found.append(name)
            todo.append(pid)
    return sorted(found)


def ver_env_workers():
    with PerEnvPool([ThreadProbeEnv] * 2) as pool:
        first = probes(pool.reset())
        ids = torch.arange(2)
        for _ in range(STEPS):
            pool.send_actions(ids, torch.zeros(2, 1))
            waiting = {0, 1}
            while waiting:
                waiting -= set(pool.wait_ready(2))
        last = probes(pool.buffers.observation_dicts())
        names = names_below()
    return first, last, names


def appo_rollout_workers():
    pool = GroupedPool([(i, ThreadProbeEnv) for i in range(2)], num_workers=2, num_groups=1)
    try:
        first = probes(pool.reset())
        for _ in range(STEPS):
            last = probes(pool.reset())
        names = names_below()
    finally:
        pool.close()
    return first, last, names


def lockstep_workers():
    envs = LockstepPool(ThreadProbeEnv, [()] * 2, multiprocessing_start_method="forkserver")
    try:
        first = probes(envs.reset())
        for _ in range(STEPS):
            last = probes([result[0] for result in envs.step([0, 0])])
        names = names_below()
    finally:
        envs.close()
    return first, last, names


def _threads(conn):
    conn.send(torch.get_num_threads())


def forkserver_child():
    context = worker_context()
    ours, theirs = context.Pipe()
    process = context.Process(target=_threads, args=(theirs,))
    process.start()
    threads = ours.recv()
    process.join()
    return threads


def main() -> None:
    report = {
        "ver": ver_env_workers(),
        "appo": appo_rollout_workers(),
        "lockstep": lockstep_workers(),
        "forkserver_child": forkserver_child(),
        "trainer": [THREADS_AT_START, torch.get_num_threads()],
    }
    print("PROBES", json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
