"""Folders laid out as a user's, and the data the documented tools make in them.

The docs' commands name paths relative to a checkout on our machines:
``.venv/bin/python`` (the checkout's venv) and ``../shared/habitat-sim/...``,
``../shared/habitat-data`` (the assets beside the checkout).  A
:class:`UserFolder` is an empty folder laid out the same way, outside the
checkout, so a command's ``data/`` and ``outputs/`` land there and never in
the checkout::

    <tmp>/shared/habitat-sim/data/test_assets -> TEST_ASSETS
    <tmp>/shared/habitat-data                 -> HAB_ASSETS
    <tmp>/main/.venv                          -> the venv running the tests
    <tmp>/main/                               the command's working folder

A command runs there through ``bash -c`` exactly as written, with only a
budget appended; ``python`` is the venv's (its ``bin`` first on ``PATH``, as an
activated venv has it).  Commands that need the real habitat-sim run without
``HABITAT_VER_SIM_FREE`` (the test process's sim-free switch); the others keep
the session's setting.

The session fixtures ``pointnav_data`` and ``hab_run_dir`` make their data with
the documented commands themselves (``make_pointnav_dataset``,
``make_hab_dataset``, with a small ``--episodes`` and ``--arrangements`` budget),
once per session:
the tests that need the data and the test of those doc commands share the run.
Registered for every test in tests/conftest.py (``pytest_plugins``).
"""

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import pytest

from habitat_ver.compat.sim_free import FORCE_ENV_VAR

REPO = Path(__file__).resolve().parents[1]
# The venv running the tests is the checkout's (.venv or .venv39); not
# resolved: its python is a link out of the venv.
VENV = Path(sys.executable).parent.parent
SHARED = REPO.parent / "shared"
# habitat-sim's test stages (../shared/habitat-sim on this project's machines).
TEST_ASSETS = Path(
    os.environ.get("HABITAT_SIM_TEST_ASSETS", SHARED / "habitat-sim" / "data" / "test_assets")
).resolve()
# Public ReplicaCAD and Fetch copies (make_hab_dataset --assets).
HAB_ASSETS = Path(os.environ.get("HABITAT_VER_HAB_ASSETS", SHARED / "habitat-data")).resolve()

# The documented data commands (README.md, docs/HAB.md) and their budgets:
# small enough for CI, large enough that an evaluation sees several episodes.
POINTNAV_DATA_COMMAND = ".venv/bin/python -m habitat_ver.tools.make_pointnav_dataset"
TRAIN_EPISODES, VAL_EPISODES = 40, 8
POINTNAV_DATA_BUDGET = (
    "--train-episodes",
    str(TRAIN_EPISODES),
    "--val-episodes",
    str(VAL_EPISODES),
)
HAB_DATA_COMMAND = "python -m habitat_ver.tools.make_hab_dataset --assets ../shared/habitat-data"
HAB_TRAIN, HAB_VAL = 3, 2
# CI's set: one train and one val arrangement (the default, 8 and 4, takes
# several times as long; docs/HAB.md).
HAB_ARRANGEMENTS = (1, 1)
HAB_DATA_BUDGET = ("--episodes", str(HAB_TRAIN), str(HAB_VAL)) + tuple(
    ("--arrangements", *map(str, HAB_ARRANGEMENTS))
)
# Generous: HAB training and the data generators take minutes on 2 loaded cores.
TIMEOUT_S = 1500


def user_env(sim: bool) -> Dict[str, str]:
    """A user's shell: the venv's ``bin`` first on PATH; real habitat-sim if ``sim``."""
    env = dict(os.environ)
    if sim:
        env.pop(FORCE_ENV_VAR, None)
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def lay_out(base: Path) -> Path:
    """Make ``base`` look like the parent of a checkout; returns the checkout-like folder."""
    sim_data = base / "shared" / "habitat-sim" / "data"
    sim_data.mkdir(parents=True, exist_ok=True)
    for link, target in (
        (sim_data / "test_assets", TEST_ASSETS),
        (base / "shared" / "habitat-data", HAB_ASSETS),
    ):
        if not link.exists():
            link.symlink_to(target, target_is_directory=True)
    folder = base / "main"
    folder.mkdir(exist_ok=True)
    if not (folder / ".venv").exists():
        (folder / ".venv").symlink_to(VENV, target_is_directory=True)
    return folder


@dataclass
class Ran:
    """A documented command's run: what was run where, and what it printed."""

    command: str  # the shell text: the doc's command and the budget
    cwd: Path
    returncode: int
    stdout: str
    stderr: str

    def tail(self, chars: int = 4000) -> str:
        return (
            f"$ {self.command}\n(in {self.cwd}, exit {self.returncode})\n"
            + (self.stdout + self.stderr)[-chars:]
        )


@dataclass
class UserFolder:
    """One user's working folder; a command with the same budget runs there once."""

    path: Path
    done: Dict[Tuple[str, Tuple[str, ...]], Ran] = field(default_factory=dict)

    def run(
        self,
        command: str,
        budget: Sequence[str] = (),
        sim: bool = False,
        cwd: Optional[Path] = None,
        timeout: int = TIMEOUT_S,
    ) -> Ran:
        key = (command, tuple(budget))
        if key not in self.done:
            text = " ".join([command, *(shlex.quote(arg) for arg in budget)])
            where = cwd or self.path
            out = subprocess.run(
                ["bash", "-c", text],
                cwd=str(where),
                env=user_env(sim),
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            self.done[key] = Ran(text, where, out.returncode, out.stdout, out.stderr)
        return self.done[key]


class UserFolders:
    """Session-wide user folders by name (data made once, shared by tests)."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._folders: Dict[str, UserFolder] = {}

    def get(self, name: str) -> UserFolder:
        if name not in self._folders:
            self._folders[name] = UserFolder(lay_out(self._factory.mktemp(f"user-{name}")))
        return self._folders[name]


@pytest.fixture(scope="session")
def user_folders(tmp_path_factory) -> UserFolders:
    return UserFolders(tmp_path_factory)


@pytest.fixture(scope="session")
def pointnav_data(user_folders) -> Path:
    """The README's ``make_pointnav_dataset`` run (40 train, 8 val episodes) in
    the ``pointnav`` user folder: its data root (``datasets/pointnav/...``,
    ``scene_datasets/``)."""
    if not (TEST_ASSETS / "scenes" / "simple_room.glb").is_file():
        pytest.skip(
            f"habitat-sim's test assets are not in {TEST_ASSETS} "
            "(set HABITAT_SIM_TEST_ASSETS to habitat-sim's data/test_assets)"
        )
    folder = user_folders.get("pointnav")
    made = folder.run(POINTNAV_DATA_COMMAND, POINTNAV_DATA_BUDGET, sim=True)
    assert made.returncode == 0, made.tail()
    return folder.path / "data"


@pytest.fixture(scope="session")
def hab_run_dir(user_folders) -> Path:
    """A folder whose ``data/`` is the README's ``make_hab_dataset`` run (small splits)."""
    if not (HAB_ASSETS / "replica_cad").is_dir():
        pytest.skip(f"no HAB assets at {HAB_ASSETS} (set HABITAT_VER_HAB_ASSETS)")
    folder = user_folders.get("hab")
    made = folder.run(HAB_DATA_COMMAND, HAB_DATA_BUDGET, sim=True)
    assert made.returncode == 0, made.tail()
    # What a user sees (tests/hab/test_hab_real.py::test_make_hab_dataset_says_what_it_made).
    (folder.path / "make_hab_dataset.stdout").write_text(made.stdout)
    (folder.path / "make_hab_dataset.stderr").write_text(made.stderr)
    return folder.path


# The oracle-skill evaluations of the three scenarios, one episode each, in one
# process (habitat_ver/tools/run_configs.py, docs/HAB.md's command with 10 episodes).
ORACLE_RUNS = ["hab/tidy_house_oracle", "hab/prepare_groceries_oracle", "hab/set_table_oracle"]


@pytest.fixture(scope="session")
def hab_oracle_logs(hab_run_dir) -> Dict[str, Path]:
    """Each oracle run's evaluation log, by config name (under outputs/oracle/)."""
    out = hab_run_dir / "outputs" / "oracle"
    run = subprocess.run(
        [sys.executable, "-m", "habitat_ver.tools.run_configs", str(out), "eval"]
        + ORACLE_RUNS
        + ["--", "habitat_baselines.test_episode_count=1"],
        cwd=str(hab_run_dir),
        env=user_env(sim=True),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return {name: out / name.replace("/", "_") / "run.log" for name in ORACLE_RUNS}
