"""Shared pieces of the real-simulator tests (marker ``sim``).

The test process itself runs sim-free (tests/conftest.py); these tests start
subprocesses without ``HABITAT_VER_SIM_FREE`` so that they load the real
habitat-sim, as a user's ``python -m habitat_baselines.run`` does.
"""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence

from habitat_ver.compat.sim_free import FORCE_ENV_VAR

# The test assets and the PointNav dataset's size live with the session
# fixture ``pointnav_data``, which makes the dataset with the README's command
# (tests/user_folders.py).
from tests.user_folders import REPO, TEST_ASSETS, TRAIN_EPISODES, VAL_EPISODES  # noqa: F401


# Each rank's line saying where habitat-sim renders (rank, where).
RENDERS = re.compile(r"rank (\d): habitat-sim renders (.*): habitat\.simulator")


def assert_each_rank_says_where_it_renders(console: str, ranks: int) -> None:
    """One line per rank in ``console``: the CPU where CUDA sees no GPU, else a GPU."""
    import torch

    expected = "on the CPU (CUDA sees no GPU)" if not torch.cuda.is_available() else "on GPU"
    said = sorted(RENDERS.findall(console))
    assert [rank for rank, _ in said] == [str(r) for r in range(ranks)], console[-4000:]
    assert all(where.startswith(expected) for _, where in said), said


def assert_ver_ranks_trained(
    done: subprocess.CompletedProcess, run: Path, ranks: int, updates: int, rank_batch: int
) -> Dict[str, List[float]]:
    """A ``ver`` run of ``ranks`` ranks (``rank_batch`` steps each per rollout,
    files under ``run``: ``ckpt/``, ``tb/``) ended well after ``updates``
    updates, each rank said where it renders, and VER's distributed
    preemption planned every rollout within its bounds, the first uncut.

    Returns:
        TensorBoard's ``system/ver_preemption_steps`` and ``system/stale_fraction``.
    """
    import torch

    from tests.trainers.conftest import tensorboard_scalars

    console = done.stdout + done.stderr
    assert done.returncode == 0, console[-4000:]
    assert_each_rank_says_where_it_renders(console, ranks)
    state = torch.load(run / "ckpt" / "resume-state.pth", weights_only=False)
    assert state["requeue_stats"]["num_updates_done"] == updates
    logged = tensorboard_scalars(run / "tb")
    planned, stale = logged["system/ver_preemption_steps"], logged["system/stale_fraction"]
    assert len(planned) == len(stale) == updates
    # The optimum S is never less than one rank's full buffer, nor more than all.
    assert all(rank_batch <= s <= ranks * rank_batch for s in planned), planned
    assert stale[0] == 0.0  # the first rollout is never cut (nothing to fill from)
    return {"planned": planned, "stale": stale}


def free_port() -> int:
    """A TCP port free on this machine now (for a run's rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def real_sim_env() -> Dict[str, str]:
    """The environment of a subprocess that runs the real habitat-sim."""
    env = {k: v for k, v in os.environ.items() if k != FORCE_ENV_VAR}
    env["PYTHONWARNINGS"] = "ignore"
    return env


def run_real(args: Sequence[str], cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    """``python <args>`` with the real habitat-sim, output captured."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=str(cwd),
        env=real_sim_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def dataset_overrides(data_root: Path) -> List[str]:
    """Hydra overrides pointing a ``pointnav/*`` config at ``data_root``."""
    data_path = (
        data_root / "datasets" / "pointnav" / "simple_room" / "v1" / "{split}" / "{split}.json.gz"
    )
    return [
        f"habitat.dataset.data_path='{data_path}'",
        f"habitat.dataset.scenes_dir={data_root / 'scene_datasets'}",
    ]
