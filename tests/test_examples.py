"""The launch examples in examples/: valid shell, real configs, and the
single-node one trains on 2 ranks as documented."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from habitat_ver.config.compose import config_names

from .trainers.conftest import run_overrides

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".sh", ".sbatch"))


def test_there_is_an_example_for_each_launcher():
    names = {p.name for p in SCRIPTS}
    assert {"torchrun_single_node.sh", "torchrun_multi_node.sh", "slurm_ver.sbatch"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_is_valid_bash_and_names_existing_configs(script):
    subprocess.run(["bash", "-n", str(script)], check=True)
    defaults = re.findall(r"CONFIG:-([\w/]+)", script.read_text())
    assert defaults and set(defaults) <= set(config_names())


@pytest.mark.multiproc
def test_single_node_example_trains_on_two_ranks(tmp_path):
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        MAIN_PORT=str(_free_port()),
        OMP_NUM_THREADS="1",
        GLOO_SOCKET_IFNAME="lo",
        NUM_RANKS="2",
        CONFIG="gym/ver_cartpole",
    )
    done = subprocess.run(
        [
            "bash",
            str(EXAMPLES / "torchrun_single_node.sh"),
            *run_overrides(tmp_path / "run", num_updates=2),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Rank 0 logs 2 updates; the first holds T*N = 32 steps from each rank,
    # the second at most that (VER's preemption may cut a rank short).
    frames = [int(f) for f in re.findall(r"update: \d+\tsteps: (\d+)\t", done.stderr)]
    assert len(frames) == 2 and frames[0] == 64 and 64 < frames[1] <= 128, done.stderr[-3000:]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
