"""Run by test_trainer_faults.py in a fresh interpreter (not collected).

``python -m habitat_ver.run`` with TRAINER on 4 envs of SCENARIOS in turn
(default: CartPoles that record their ``close``, from ``faulty_envs``), T=8,
logging every update, with a budget no test waits for: the test stops it.
Usage: train_run.py TRAINER OUT [SCENARIO,SCENARIO,...]
"""

import sys

from habitat_ver.run import main
from quiet_run import quiet_run  # copied beside this script

if __name__ == "__main__":
    trainer, out = sys.argv[1], sys.argv[2]
    scenarios = sys.argv[3].split(",") if len(sys.argv) > 3 else ["RecordsCloseCartPole-v0"]
    main(
        [f"--config-name=gym/{trainer}_cartpole"]
        + quiet_run(out, 4, 8, scenarios)
        + [
            "habitat_baselines.total_num_steps=-1",
            "habitat_baselines.num_updates=100000",
            "habitat_baselines.log_interval=1",
        ]
    )
