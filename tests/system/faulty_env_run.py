"""Run by test_per_env_pool.py in a fresh interpreter (not collected).

Steps CartPole and an env that raises at its third step in a PerEnvPool
and prints the error the pool raised.  Mode ``hangs_while_built``: the second
env never finishes its construction, and the pool waits 2 s for it.
"""

import functools
import os
import signal
import sys

import gym
import torch

import habitat_ver  # noqa: F401
from habitat_ver.system import per_env_pool
from habitat_ver.system.per_env_pool import EnvWorkerError, PerEnvPool

from faulty_envs import HangsWhileBuilt, RaisesOnThirdStep  # copied beside this script


def main() -> None:
    names = ["CartPole-v1", "RaisesOnThirdStep"]
    makers = [functools.partial(gym.make, "CartPole-v1"), RaisesOnThirdStep]
    if sys.argv[1] == "hangs_while_built":
        per_env_pool.START_TIMEOUT_S = 2.0
        names[1], makers[1] = "HangsWhileBuilt", HangsWhileBuilt
    try:
        pool = PerEnvPool(makers, describe=lambda i: names[i], serial=sys.argv[1] == "serial")
    except EnvWorkerError as error:
        print(f"ERROR: {error}")
        return
    print("workers started", flush=True)
    pool.reset()
    if sys.argv[1] == "sigkill":  # the trainer dies without closing the pool
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        for _ in range(100):
            ids = torch.arange(pool.num_envs)
            pool.send_actions(ids, torch.zeros(2, 1, dtype=torch.long))
            waiting = set(range(pool.num_envs))
            while waiting:
                waiting -= set(pool.wait_ready(2))
    except EnvWorkerError as error:
        print(f"ERROR: {error}")
        return
    print("no error")


if __name__ == "__main__":
    main()
