"""Test-wide set-up: sim-free mode is decided before any test imports habitat.

The test process runs in sim-free mode by default (``HABITAT_VER_SIM_FREE=1``,
also inherited by every worker and subprocess a test starts), so the sim-free
tests mean the same with and without habitat-sim installed, and importing
habitat stays cheap.  Tests marked ``sim`` need the real simulator, in the test
process or in subprocesses that drop the variable: they run in a session of
their own started with ``HABITAT_VER_SIM_FREE=0`` (``make test`` runs both) and
are skipped elsewhere; where habitat-sim is not installed the reason says how
to get it.
"""

import os

import pytest

os.environ.setdefault("HABITAT_VER_SIM_FREE", "1")

import habitat_ver  # noqa: F401
from habitat_ver.compat import sim_free
from habitat_ver.compat.sim_free import real_habitat_sim_installed

# Session fixtures of user folders and the data the documented tools make
# there (pointnav_data, hab_run_dir, hab_oracle_logs), shared by every folder.
pytest_plugins = ("tests.user_folders",)

SIM_SKIP_REASON = (
    "habitat-sim is not installed: `conda install habitat-sim withbullet -c conda-forge "
    "-c aihabitat`, or on this project's machines `make install` with the wheel in "
    "../shared/habitat-sim/ (see README, 'habitat-sim and PointNav')"
)


IN_OWN_SESSION_REASON = (
    "`sim` tests run in their own session with the real habitat-sim in the test "
    "process: `HABITAT_VER_SIM_FREE=0 python -m pytest -m sim` (make test runs both)"
)


# Session data that tests share (tests/user_folders.py, tests/hab/conftest.py)
# -> the group of tests that use it.  `make test` runs the `sim` session on two
# pytest-xdist workers with ``--dist loadgroup``: a group runs on one worker, so
# each dataset is made once and the rows of the docs' command test that share
# a user folder (one writes what a later one reads) run there in order.
DATA_GROUPS = {
    "pointnav_data": "pointnav",
    "hab_run_dir": "hab",
    "hab_oracle_logs": "hab",
    "skill_checkpoints": "hab",
}


def data_group(item) -> "str | None":
    """The data group of a test: by the fixtures it uses or, for a documented
    command's row (tests/docs), the user folder and data that row names."""
    names = set(getattr(item, "fixturenames", ()))
    row_of = getattr(item.module, "row_of", None)
    params = getattr(getattr(item, "callspec", None), "params", {})
    if row_of is not None and "text" in params:
        row = row_of(params["text"])
        if getattr(row, "folder", ""):
            return row.folder
        names |= set(getattr(row, "needs", ()))
    return next((group for name, group in DATA_GROUPS.items() if name in names), None)


def pytest_collection_modifyitems(config, items):
    if getattr(config.option, "numprocesses", None) and config.option.dist != "loadgroup":
        # Several pytest-xdist workers (not the `sim` session, whose groups
        # keep their order): the long tests start first, so the short ones
        # fill the other worker meanwhile instead of one long test running
        # alone at the end.
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    for item in items:
        group = data_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    if not real_habitat_sim_installed():
        reason = SIM_SKIP_REASON
    elif sim_free.forced():
        reason = IN_OWN_SESSION_REASON
    else:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("sim") is not None:
            item.add_marker(skip)
