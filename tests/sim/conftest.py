"""Shared pieces of the real-simulator tests (marker ``sim``).

The test process itself runs sim-free (tests/conftest.py); these tests start
subprocesses without ``HABITAT_VER_SIM_FREE`` so that they load the real
habitat-sim, as a user's ``python -m habitat_baselines.run`` does.
"""

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence

import pytest

from habitat_ver.compat.sim_free import FORCE_ENV_VAR

REPO = Path(__file__).resolve().parents[2]
# habitat-sim's test stages: ../shared/habitat-sim on this project's machines,
# anywhere else through HABITAT_SIM_TEST_ASSETS (habitat-sim's data/test_assets).
TEST_ASSETS = Path(
    os.environ.get(
        "HABITAT_SIM_TEST_ASSETS", REPO.parent / "shared" / "habitat-sim" / "data" / "test_assets"
    )
).resolve()
# Small enough for CI, large enough that an evaluation sees several episodes.
TRAIN_EPISODES = 40
VAL_EPISODES = 8


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


@pytest.fixture(scope="session")
def pointnav_data(tmp_path_factory) -> Path:
    """A generated simple_room PointNav dataset (once per session)."""
    stages = TEST_ASSETS / "scenes"
    if not (stages / "simple_room.glb").is_file():
        pytest.skip(
            f"habitat-sim's test assets are not in {TEST_ASSETS} "
            "(set HABITAT_SIM_TEST_ASSETS to habitat-sim's data/test_assets)"
        )
    root = tmp_path_factory.mktemp("pointnav_data")
    out = run_real(
        [
            "-m",
            "habitat_ver.tools.make_pointnav_dataset",
            "--stages-dir",
            str(stages),
            "--out",
            str(root),
            "--train-episodes",
            str(TRAIN_EPISODES),
            "--val-episodes",
            str(VAL_EPISODES),
        ],
        cwd=root,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return root
