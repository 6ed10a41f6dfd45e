"""The built wheel carries the config tree and the Hydra plugin."""

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (found,) = out.glob("habitat_ver-*.whl")
    return found


def test_wheel_contains_configs_plugin_and_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "habitat_ver_configs/habitat_baselines/gym/ddppo_cartpole.yaml" in names
    assert "habitat_ver_configs/habitat_baselines/doom/ddppo_my_way_home.yaml" in names
    assert "hydra_plugins/habitat_ver_plugin/__init__.py" in names
    assert "hydra_plugins/__init__.py" not in names  # a namespace package
    assert "habitat_ver/registration.py" in names
    # a regular package: Python 3.9's importlib.resources (Hydra's pkg://) needs it
    assert "habitat_ver_configs/habitat_baselines/__init__.py" in names
    assert not any(n.startswith("tests/") for n in names)


def test_installed_copy_composes_configs(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--quiet",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    code = textwrap.dedent(f"""
        import habitat_ver, habitat_ver_configs
        from pathlib import Path
        target = Path({str(target)!r})
        assert Path(habitat_ver.__file__).is_relative_to(target), habitat_ver.__file__
        assert Path(list(habitat_ver_configs.__path__)[0]).is_relative_to(target)
        from habitat_ver.config.compose import get_config
        config = get_config("gym/ddppo_cartpole")
        print(config.habitat_baselines.trainer_name, config.habitat.env_task_gym_id)
    """)
    env = dict(os.environ, PYTHONPATH=str(target))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == ["ddppo", "CartPole-v1"]


def test_upstream_search_path_finds_our_configs_through_the_plugin():
    # habitat_baselines.run composes from its own config module; only the
    # discovered search-path plugin can make our tree visible there.
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    import habitat_ver  # noqa: F401

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="habitat_baselines.config", version_base=None):
        config = compose(config_name="gym/ddppo_cartpole")
    GlobalHydra.instance().clear()
    assert config.habitat_baselines.trainer_name == "ddppo"


def test_this_install_lets_hydra_find_the_plugin_outside_the_checkout(tmp_path):
    # From a folder that is not the checkout, only the installed copy can be
    # found.  setuptools' default editable mode hides the hydra_plugins
    # namespace from Hydra's scan (an empty list here); `make` installs in
    # strict mode, and a wheel install has no such problem.
    code = (
        "from hydra.core.plugins import Plugins\n"
        "from hydra.plugins.search_path_plugin import SearchPathPlugin\n"
        "print(sorted(p.__name__ for p in Plugins.instance().discover(SearchPathPlugin)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "HabitatVerSearchPathPlugin" in out.stdout.splitlines()[-1]
