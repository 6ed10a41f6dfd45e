"""Run by test_trainer_faults.py in a fresh interpreter (not collected).

Steps CartPole (env 0) and an env whose third step never returns (env 1) in
VER's env worker pool or in two APPO rollout workers, hang warning after
HANG_WARNING_S.  Usage: hung_env_run.py ver|appo warn|sigkill

* warn: steps env 0 whenever its result arrives for 3 s, prints how many
  results came, closes the pool.
* sigkill: once env 1 is stuck, prints the pids of the workers, the
  forkserver and the resource tracker, and SIGKILLs itself.
"""

import functools
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import queue
import signal
import sys
import time

import gym
import torch

import habitat_ver  # noqa: F401
from habitat_ver.system.grouped_pool import GroupedPool
from habitat_ver.system.per_env_pool import PerEnvPool

from faulty_envs import HangsOnThirdStep  # copied beside this script

HANG_WARNING_S = 1.0
NAMES = ["CartPole-v1", "HangsOnThirdStep"]
MAKERS = [functools.partial(gym.make, "CartPole-v1"), HangsOnThirdStep]


def ver_pool():
    """``(pool, send(ids), wait(timeout) -> ids)`` of VER's env workers."""
    pool = PerEnvPool(MAKERS, describe=lambda i: NAMES[i], hang_warning_s=HANG_WARNING_S)

    def send(ids):
        pool.send_actions(torch.tensor(ids), torch.zeros(len(ids), 1, dtype=torch.long))

    return pool, send, lambda timeout: pool.wait_ready(2, timeout=timeout)


def appo_pool():
    """The same over two rollout workers of one env (worker w steps env w)."""
    pool = GroupedPool(
        list(enumerate(MAKERS)), 2, 1, describe=lambda i: NAMES[i], hang_warning_s=HANG_WARNING_S
    )
    pool.buffers.actions.zero_()

    def send(ids):
        for worker in ids:
            pool.send(worker, 0)

    return pool, send, lambda timeout: [pool.next_report(timeout)[1]]


def drive(send, wait, seconds):
    """Step each env again as soon as its result arrives; results counted."""
    results = 0
    send([0, 1])
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        try:
            ready = wait(left)
        except queue.Empty:
            break
        results += len(ready)
        send(ready)
    return results


def main():
    pool, send, wait = {"ver": ver_pool, "appo": appo_pool}[sys.argv[1]]()
    pool.reset()
    if sys.argv[2] == "sigkill":
        drive(send, wait, 2 * HANG_WARNING_S)
        helpers = [
            multiprocessing.forkserver._forkserver._forkserver_pid,
            multiprocessing.resource_tracker._resource_tracker._pid,
        ]
        print("pids:", *[p.pid for p in pool._processes], *helpers, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    print(f"results: {drive(send, wait, 3 * HANG_WARNING_S)}", flush=True)
    pool.close()


if __name__ == "__main__":
    main()
