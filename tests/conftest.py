"""Test-wide set-up: sim-free mode is decided before any test imports habitat.

Tests marked ``sim`` need the real habitat-sim; where it is missing (sim-free
mode is on) they are skipped with the way to get it.
"""

import pytest

import habitat_ver  # noqa: F401
from habitat_ver.compat import sim_free

SIM_SKIP_REASON = (
    "needs the real habitat-sim: `conda install habitat-sim withbullet -c conda-forge "
    "-c aihabitat`, or on our machines the wheel in ../shared/habitat-sim "
    "(`.venv/bin/python -m pip install ../shared/habitat-sim/habitat_sim-*.whl`, "
    "runtime libraries in its BUILD.md)"
)


def pytest_collection_modifyitems(config, items):
    if not sim_free.is_active():
        return
    skip = pytest.mark.skip(reason=SIM_SKIP_REASON)
    for item in items:
        if item.get_closest_marker("sim") is not None:
            item.add_marker(skip)
