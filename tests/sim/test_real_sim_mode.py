"""With the real habitat-sim importable, sim-free mode stays off (issue 14, item 3)."""

import json

import pytest

from .conftest import REPO, run_real

pytestmark = pytest.mark.sim

PROBE = """
import json, sys
import habitat_ver
import habitat, habitat_sim, magnum
from habitat_ver.compat import sim_free
print(json.dumps({
    "active": sim_free.is_active(),
    "finder_installed": any(type(f).__name__ == "_StandInFinder" for f in sys.meta_path),
    "stand_ins": [n for n in ("habitat_sim", "magnum", "corrade")
                  if getattr(sys.modules[n], "__habitat_ver_stand_in__", False)],
    "habitat_sim_file": habitat_sim.__file__,
    "magnum_vector": list(magnum.Vector3(1, 2, 3) + magnum.Vector3(1, 1, 1)),
    "make_sim_guarded": habitat.sims.make_sim.__name__ == "refuse",
}))
"""


def test_real_habitat_sim_gets_no_stand_in():
    out = run_real(["-c", PROBE], cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["active"] is False and probe["finder_installed"] is False
    assert probe["stand_ins"] == []
    assert probe["habitat_sim_file"].endswith("habitat_sim/__init__.py")
    # Real Magnum arithmetic, not a stand-in's empty iteration.
    assert probe["magnum_vector"] == [2.0, 3.0, 4.0]
    assert probe["make_sim_guarded"] is False
