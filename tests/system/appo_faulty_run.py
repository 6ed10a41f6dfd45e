"""Run by test_grouped_pool.py in a fresh interpreter (not collected).

Trains appo on three CartPoles and an env that raises at its third step and
prints the error the run raised.  Usage: appo_faulty_run.py MODE OUT, MODE one
of ``processes``, ``serial`` or ``hangs_while_built`` (processes; env 1 never
finishes its construction, and the workers are waited for 2 s).
"""

import sys

from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp
from habitat_ver.system import grouped_pool
from habitat_ver.system.per_env_pool import EnvWorkerError
from quiet_run import quiet_run  # copied beside this script


def main():
    out = sys.argv[2]
    scenarios = ["CartPole-v1", "RaisesOnThirdStep-v0", "CartPole-v1", "CartPole-v1"]
    if sys.argv[1] == "hangs_while_built":
        grouped_pool.START_TIMEOUT_S = 2.0
        scenarios[1] = "HangsWhileBuilt-v0"
    overrides = quiet_run(out, 4, 8, scenarios) + [
        "habitat_baselines.total_num_steps=-1",
        "habitat_baselines.num_updates=50",
        f"habitat_baselines.rl.appo.serial={sys.argv[1] == 'serial'}",
    ]
    try:
        execute_exp(get_config("gym/appo_cartpole", overrides), "train")
    except EnvWorkerError as error:
        print(f"ERROR: {error}")
        return
    print("no error")


if __name__ == "__main__":
    main()
