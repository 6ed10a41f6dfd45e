"""Run by test_trainer_faults.py in a fresh interpreter (not collected).

Stands in for a torchrun agent: starts ``train_run.py`` as its rank, with the
``TORCHELASTIC_RUN_ID`` torchrun gives, prints the rank's pid and waits for it
(the test kills this process). The rank writes ``rank_stdout.txt`` and
``rank_stderr.txt`` beside it.
Usage: launcher_run.py TRAINER OUT
"""

import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    here = Path(__file__).parent
    env = dict(os.environ, TORCHELASTIC_RUN_ID="stand-in")
    with open(here / "rank_stdout.txt", "w") as out, open(here / "rank_stderr.txt", "w") as err:
        rank = subprocess.Popen(
            [sys.executable, str(here / "train_run.py"), *sys.argv[1:]],
            env=env,
            stdout=out,
            stderr=err,
            cwd=here,
        )
    print(rank.pid, flush=True)
    rank.wait()
