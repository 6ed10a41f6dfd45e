"""Fixtures of the worker-process tests."""

import os
import shutil
from pathlib import Path
from typing import Callable, List, Tuple

import pytest


def _processes_mentioning(marker: str) -> List[Tuple[str, str]]:
    """(pid, start of command line) of every process whose command line
    contains ``marker`` (a run's folder is on its workers' sys.path)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append((pid, cmdline.replace("\0", " ")[:120]))
    return found


@pytest.fixture
def processes_mentioning() -> Callable[[str], List[Tuple[str, str]]]:
    return _processes_mentioning


@pytest.fixture
def marked_scripts(tmp_path) -> Callable[..., Path]:
    """Copies the named files of this folder into a fresh marker folder and
    returns the first one's path.  A script run from there has the folder on
    its sys.path, and so do the worker processes it starts: it marks every
    process of the run (see :func:`processes_mentioning`)."""

    def copy(*names: str) -> Path:
        marker_dir = tmp_path / "run_marker"
        marker_dir.mkdir()
        for name in names:
            shutil.copy(Path(__file__).with_name(name), marker_dir / name)
        return marker_dir / names[0]

    return copy
