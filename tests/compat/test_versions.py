"""The supported habitat-lab/baselines range: checked at import, equal to pyproject's."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from habitat_ver.compat import versions
from habitat_ver.compat.versions import UnsupportedHabitatError, check_habitat_versions

ROOT = Path(__file__).resolve().parents[2]


def _pyproject_requirements():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return [Requirement(r) for r in tomllib.load(f)["project"]["dependencies"]]


@pytest.mark.parametrize("python", ["3.9", "3.10", "3.11", "3.12"])
def test_pyproject_ranges_equal_the_import_check(python):
    env = {"python_version": python}
    for name in versions.CHECKED_DISTRIBUTIONS:
        active = [
            r
            for r in _pyproject_requirements()
            if r.name == name and (r.marker is None or r.marker.evaluate(env))
        ]
        assert len(active) == 1, (name, python)
        expected = versions.supported_range(tuple(int(p) for p in python.split(".")))
        assert str(active[0].specifier) == str(type(active[0].specifier)(expected))


@pytest.mark.parametrize(
    "version, before_311, on_311",
    [
        ("0.3.3", True, True),  # a v0.3.3 source checkout
        ("0.3.320260507", True, True),  # the newest nightly
        ("0.3.320250127", True, True),
        ("0.3.2", True, False),  # a v0.3.2 checkout: no 3.11 support
        ("0.3.220241205", True, False),
        ("0.3.220241031", True, False),
        ("0.3.20231024", False, False),  # a 0.3.0 nightly, sorts above 0.3.3
        ("0.3.1", False, False),
        ("0.2.5", False, False),
        ("0.2.520230802", False, False),
        ("0.4.0", False, False),
    ],
)
def test_supported_set(version, before_311, on_311):
    from packaging.specifiers import SpecifierSet

    assert (version in SpecifierSet(versions.supported_range((3, 9)))) is before_311
    assert (version in SpecifierSet(versions.supported_range((3, 11)))) is on_311


def test_old_habitat_lab_is_one_clear_error_naming_found_and_supported():
    spec = versions.supported_range()
    with pytest.raises(UnsupportedHabitatError) as raised:
        check_habitat_versions({"habitat-lab": "0.2.5", "habitat-baselines": "0.3.3"})
    message = str(raised.value)
    assert "habitat-lab 0.2.5 is installed" in message
    from packaging.specifiers import SpecifierSet

    assert f"supports habitat-lab {SpecifierSet(spec)} on Python" in message
    assert "v0.3.3" in message


def test_supported_and_unparsable_versions():
    check_habitat_versions({"habitat-lab": "0.3.3", "habitat-baselines": "0.3.320260507"})
    with pytest.raises(UnsupportedHabitatError, match="habitat-baselines banana is installed"):
        check_habitat_versions({"habitat-baselines": "banana"})


def test_import_habitat_ver_fails_first_with_an_old_habitat_lab(tmp_path):
    # A stand-in habitat-lab 0.2.5 distribution ahead of the real one on the
    # path: `import habitat_ver` must stop at the version check, before any
    # habitat module is imported.
    info = tmp_path / "habitat_lab-0.2.5.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: habitat-lab\nVersion: 0.2.5\n")
    code = textwrap.dedent("""
        import sys
        try:
            import habitat_ver
        except ImportError as error:
            print(type(error).__name__, "|", error)
            print("habitat imported:", "habitat" in sys.modules)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = done.stdout.strip().splitlines()[-2:]
    assert first.startswith("UnsupportedHabitatError | ")
    assert "habitat-lab 0.2.5 is installed" in first
    assert second == "habitat imported: False"
