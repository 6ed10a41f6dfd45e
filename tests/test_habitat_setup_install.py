"""Installing habitat-ver into a Habitat setup replaces none of its packages.

The stand-in setup is a venv whose habitat-lab and habitat-baselines are
editable 0.3.3 installs (what ``pip install -e`` of a v0.3.3 checkout leaves:
a dist-info with ``direct_url.json``) and whose torch, numpy, gym and every
other package are this interpreter's own, symlinked in.  The "index" is a
folder of stand-in wheels of newer releases (the 0.3.3 nightly, a newer torch,
numpy and gym), so a range that rejected an installed version makes pip plan
to install a stand-in instead of failing to resolve.  Nothing is downloaded
(``--no-index``).  The same harness run with the old ``>=0.3.320250127``
ranges must see pip replace both habitat distributions, which shows the check
can fail.
"""

import json
import os
import shutil
import subprocess
import sysconfig
import venv
import zipfile
from pathlib import Path
from typing import Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP_VERSIONS = {"habitat-lab": "0.3.3", "habitat-baselines": "0.3.3"}
# Newer releases pip may choose from when an installed version is rejected.
STAND_IN_RELEASES = {
    "habitat-lab": "0.3.320260507",
    "habitat-baselines": "0.3.320260507",
    "torch": "99.0.0",
    "numpy": "1.99.0",
    "gym": "0.23.0.post99",
}
OLD_RANGE = ">=0.3.320250127,<0.4"


def _metadata(name: str, version: str) -> str:
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"


def _dist_info_name(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}.dist-info"


def _editable_install(site: Path, name: str, version: str, checkout: Path) -> None:
    info = site / _dist_info_name(name, version)
    info.mkdir()
    (info / "METADATA").write_text(_metadata(name, version))
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("")
    (info / "direct_url.json").write_text(
        json.dumps({"url": checkout.as_uri(), "dir_info": {"editable": True}})
    )


def _stand_in_wheel(folder: Path, name: str, version: str) -> None:
    info = _dist_info_name(name, version)
    path = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{info}/METADATA", _metadata(name, version))
        wheel.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{info}/RECORD", "")


def _is_ours_or_habitat(entry: str) -> bool:
    return "habitat" in entry.lower()


def _habitat_setup(base: Path) -> Path:
    """A venv: stand-in editable habitat 0.3.3 installs, everything else linked."""
    env = base / "env"
    venv.EnvBuilder(with_pip=False).create(env)
    (site,) = {Path(p) for p in (env / "lib").glob("python*/site-packages")}
    ours = {Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["platlib"])}
    for folder in ours:
        for entry in os.listdir(folder):
            if not _is_ours_or_habitat(entry) and not (site / entry).exists():
                (site / entry).symlink_to(folder / entry)
    for name, version in SETUP_VERSIONS.items():
        _editable_install(site, name, version, base / "habitat-lab" / name)
    return env


def _project_copy(base: Path, habitat_range: str = "") -> Path:
    """habitat-ver's sources; with ``habitat_range``, its habitat deps replaced."""
    copy = base / "habitat-ver"
    copy.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, copy / name)
    for name in ("habitat_ver", "hydra_plugins", "configs"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    if habitat_range:
        text = (copy / "pyproject.toml").read_text()
        lines = [
            line
            for line in text.splitlines(keepends=True)
            if not line.strip().startswith(('"habitat-lab', '"habitat-baselines'))
        ]
        at = next(i for i, line in enumerate(lines) if line.strip().startswith('"torch'))
        lines[at:at] = [
            f'    "habitat-lab{habitat_range}",\n',
            f'    "habitat-baselines{habitat_range}",\n',
        ]
        (copy / "pyproject.toml").write_text("".join(lines))
    return copy


def _dry_run_installs(env: Path, project: Path, index: Path, base: Path) -> Dict[str, str]:
    """``{name: version}`` pip plans to install for ``pip install project``."""
    report = base / "report.json"
    cmd = [
        str(env / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--no-index",
        "--find-links",
        str(index),
        "--no-build-isolation",
        "--disable-pip-version-check",
        "--quiet",
        "--report",
        str(report),
        str(project),
    ]
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PIP_CONFIG_FILE=os.devnull),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    planned: List[dict] = json.loads(report.read_text())["install"]
    return {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in planned}


@pytest.fixture
def index(tmp_path) -> Path:
    folder = tmp_path / "index"
    folder.mkdir()
    for name, version in STAND_IN_RELEASES.items():
        _stand_in_wheel(folder, name, version)
    return folder


def test_install_into_habitat_setup_replaces_nothing(tmp_path, index):
    env = _habitat_setup(tmp_path)
    planned = _dry_run_installs(env, _project_copy(tmp_path), index, tmp_path)
    assert planned == {"habitat-ver": "0.1.0"}, planned


def test_harness_catches_the_old_nightly_only_ranges(tmp_path, index):
    env = _habitat_setup(tmp_path)
    planned = _dry_run_installs(env, _project_copy(tmp_path, OLD_RANGE), index, tmp_path)
    assert planned["habitat-lab"] == STAND_IN_RELEASES["habitat-lab"]
    assert planned["habitat-baselines"] == STAND_IN_RELEASES["habitat-baselines"]
    assert not {"torch", "numpy", "gym", "torchvision"} & set(planned)
