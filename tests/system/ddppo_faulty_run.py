"""Run by test_trainer_faults.py in a fresh interpreter (not collected).

``python -m habitat_ver.run`` with the ddppo trainer on CartPole (env 0) and
a faulty env (env 1), hang warning after 1 s.
Usage: ddppo_faulty_run.py raises|hangs OUT
"""

import sys

from habitat_ver.run import main
from quiet_run import quiet_run  # copied beside this script

if __name__ == "__main__":
    faulty, out = (
        {"raises": "RaisesOnThirdStep-v0", "hangs": "HangsOnThirdStep-v0"}[sys.argv[1]],
        sys.argv[2],
    )
    main(
        ["--config-name=gym/ddppo_cartpole"]
        + quiet_run(out, 2, 8, ["CartPole-v1", faulty])
        + ["habitat_baselines.env_workers.hang_warning_seconds=1"]
    )
