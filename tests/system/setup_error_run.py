"""Run by test_trainer_faults.py in a fresh interpreter (not collected).

``python -m habitat_ver.run`` with torch's Adam replaced by one that raises:
an error after the env workers started, as ``rl.ppo.lr=-1`` gave before the
config was validated.  Usage: setup_error_run.py TRAINER config|other OUT
"""

import multiprocessing
import sys

import torch

from habitat_ver.config.validate import ConfigError
from habitat_ver.run import main
from quiet_run import quiet_run  # copied beside this script

KIND = sys.argv[2]  # read now: main() replaces sys.argv


class FailingAdam(torch.optim.Adam):
    def __init__(self, *args, **kwargs):
        print(f"env workers running: {len(multiprocessing.active_children())}", flush=True)
        if KIND == "config":
            raise ConfigError("habitat_baselines.rl.ppo.lr=-1.0 is not allowed: injected")
        raise ValueError("Invalid learning rate: injected")


if __name__ == "__main__":
    trainer, out = sys.argv[1], sys.argv[3]
    torch.optim.Adam = FailingAdam
    main([f"--config-name=gym/{trainer}_cartpole"] + quiet_run(out, 4, 8))
