"""Sim-free mode: decided by importability; simulator paths fail clearly."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from habitat_ver.compat import sim_free

SIM_FREE_FILE = Path(sim_free.__file__)


def _run(code: str, extra_path: str = "", force: bool = False) -> subprocess.CompletedProcess:
    # Decided by importability here, as on a user's machine, unless forced:
    # drop the test session's HABITAT_VER_SIM_FREE=1 (tests/conftest.py).
    env = {k: v for k, v in os.environ.items() if k != sim_free.FORCE_ENV_VAR}
    if force:
        env[sim_free.FORCE_ENV_VAR] = "1"
    if extra_path:
        env["PYTHONPATH"] = extra_path + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


LOAD_MODULE_ONLY = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("sf", {str(SIM_FREE_FILE)!r})
sf = importlib.util.module_from_spec(spec); spec.loader.exec_module(sf)
print(sf.activate(), sf.is_active(), sf.habitat_sim_available())
"""


@pytest.mark.skipif(sim_free.real_habitat_sim_installed(), reason="habitat-sim is installed here")
def test_activates_when_habitat_sim_is_missing():
    out = _run(LOAD_MODULE_ONLY)
    assert out.stdout.split() == ["True", "True", "False"], out.stderr


def test_environment_variable_forces_sim_free_mode(tmp_path):
    # Even with a habitat_sim package importable, HABITAT_VER_SIM_FREE=1
    # installs the stand-ins (the test session runs this way).
    (tmp_path / "habitat_sim").mkdir()
    (tmp_path / "habitat_sim" / "__init__.py").write_text("")
    out = _run(LOAD_MODULE_ONLY, extra_path=str(tmp_path), force=True)
    assert out.stdout.split() == ["True", "True", "False"], out.stderr


def test_stays_off_when_habitat_sim_is_importable(tmp_path):
    # A package named habitat_sim on the path is all it takes: the switch
    # looks at importability only, nothing else about the machine.
    (tmp_path / "habitat_sim").mkdir()
    (tmp_path / "habitat_sim" / "__init__.py").write_text("")
    out = _run(LOAD_MODULE_ONLY, extra_path=str(tmp_path))
    assert out.stdout.split() == ["False", "False", "True"], out.stderr


def test_this_process_runs_sim_free():
    assert sim_free.is_active() and not sim_free.habitat_sim_available()


@pytest.mark.parametrize("simulator", ["Sim-v0", "RearrangeSim-v0"])
def test_simulator_registry_refuses_with_install_hint(simulator):
    from habitat.core.registry import registry

    make = registry.get_simulator(simulator)
    with pytest.raises(sim_free.HabitatSimRequiredError, match="conda install habitat-sim"):
        make(config=None)


def test_habitat_make_sim_refuses():
    from habitat.sims import make_sim

    with pytest.raises(sim_free.HabitatSimRequiredError, match=r"habitat-sim is not installed"):
        make_sim("Sim-v0", config=None)


def test_stand_ins_let_rearrange_and_hrl_modules_import():
    import habitat.tasks.rearrange.rearrange_task as rearrange_task
    from habitat_baselines.rl.hrl.hierarchical_policy import HierarchicalPolicy

    assert rearrange_task.RearrangeTask.__name__ == "RearrangeTask"
    assert HierarchicalPolicy.__name__ == "HierarchicalPolicy"


def test_importing_habitat_first_is_refused_with_advice():
    out = _run(
        LOAD_MODULE_ONLY.replace(
            "import importlib.util, sys",
            "import importlib.util, sys; sys.modules['habitat'] = object()",
        ),
        force=True,
    )
    assert out.returncode != 0
    assert "import habitat_ver" in out.stderr


def test_forcing_after_habitat_came_with_a_real_habitat_sim_warns_and_keeps_it(tmp_path):
    # `python -m habitat_baselines.run` imports habitat, and with it an
    # installed habitat-sim, before Hydra's plugin scan imports habitat_ver.
    (tmp_path / "habitat_sim").mkdir()
    (tmp_path / "habitat_sim" / "__init__.py").write_text("")
    out = _run(
        LOAD_MODULE_ONLY.replace(
            "import importlib.util, sys",
            "import importlib.util, sys, habitat_sim; sys.modules['habitat'] = object()",
        ),
        extra_path=str(tmp_path),
        force=True,
    )
    assert out.stdout.split() == ["False", "False", "False"], out.stderr
    assert "HABITAT_VER_SIM_FREE=1 has no effect here" in out.stderr
    assert "python -m habitat_ver.run" in out.stderr


def test_the_refusal_names_the_variable_that_forces_sim_free_mode(monkeypatch):
    monkeypatch.setenv(sim_free.FORCE_ENV_VAR, "1")
    forced = str(sim_free.HabitatSimRequiredError("'Sim-v0'"))
    assert "HABITAT_VER_SIM_FREE=1 forces sim-free mode" in forced and "unset it" in forced
    monkeypatch.delenv(sim_free.FORCE_ENV_VAR)
    plain = str(sim_free.HabitatSimRequiredError("'Sim-v0'"))
    assert plain.startswith("'Sim-v0': habitat-sim is not installed, and this needs")
    assert "HABITAT_VER_SIM_FREE" not in plain
