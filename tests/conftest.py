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
import signal

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


def foreground_sigint() -> None:
    """``preexec_fn`` of a run that a test stops as Ctrl-C in a terminal would.

    A shell starts background jobs (``make test &``, nohup) with SIGINT ignored;
    children inherit that through pytest and ``subprocess`` (which restores
    SIGPIPE, not SIGINT), and Python keeps an ignored SIGINT, so such a run
    would never see the test's Ctrl-C.  The run gets a terminal's foreground
    disposition back instead."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


IN_OWN_SESSION_REASON = (
    "`sim` tests run in their own session with the real habitat-sim in the test "
    "process: `HABITAT_VER_SIM_FREE=0 python -m pytest -m sim` (make test runs both)"
)


def pytest_collection_modifyitems(config, items):
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
