"""Test-wide set-up: sim-free mode is decided before any test imports habitat.

The test process always runs in sim-free mode (``HABITAT_VER_SIM_FREE=1``, also
inherited by every worker and subprocess a test starts), so the sim-free tests
mean the same with and without habitat-sim installed, and importing habitat
stays cheap.  Tests marked ``sim`` run the real simulator in subprocesses that
drop the variable (see ``tests/sim/``); where habitat-sim is not installed
they are skipped with a reason saying how to get it.
"""

import os

import pytest

os.environ.setdefault("HABITAT_VER_SIM_FREE", "1")

import habitat_ver  # noqa: F401,E402
from habitat_ver.compat.sim_free import real_habitat_sim_installed  # noqa: E402

SIM_SKIP_REASON = (
    "habitat-sim is not installed: `conda install habitat-sim withbullet -c conda-forge "
    "-c aihabitat`, or on this project's machines `make install` with the wheel in "
    "../shared/habitat-sim/ (see README, 'habitat-sim and PointNav')"
)


def pytest_collection_modifyitems(config, items):
    if real_habitat_sim_installed():
        return
    skip = pytest.mark.skip(reason=SIM_SKIP_REASON)
    for item in items:
        if "sim" in item.keywords:
            item.add_marker(skip)
