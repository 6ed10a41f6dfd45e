"""Our tools' ``--help`` on the real simulator is the usage alone: importing
habitat-lab printed gym's deprecation banner and six Magnum plugin notices
first (habitat_ver/common/noise_filter.py)."""

import pytest

from tests.sim.conftest import run_real

pytestmark = pytest.mark.sim


@pytest.mark.parametrize(
    "tool", ["habitat_ver.tools.hab_stage_report", "habitat_ver.tools.make_hab_dataset"]
)
def test_help_is_the_usage_alone(tool, tmp_path):
    done = run_real(["-m", tool, "--help"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""
    assert done.stdout.startswith(f"usage: python -m {tool} ")
