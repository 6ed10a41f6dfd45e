"""Fixtures of the worker-process tests."""

import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, List, Set, Tuple

import pytest

# Seconds a finished run's processes get to go: the forkserver exits once it
# sees the run's main process gone, workers check for it every 2 s, and the
# resource tracker removes a killed process's semaphores when it exits.
EXIT_GRACE_S = 30.0


def _settled(probe: Callable[[], Any], grace_s: float = EXIT_GRACE_S) -> Any:
    """``probe()`` once it finds nothing, or what it still finds after ``grace_s``."""
    deadline = time.monotonic() + grace_s
    while (found := probe()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


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


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def pids_left() -> Callable[[List[int]], List[int]]:
    """Which of ``pids`` still run after the grace a clean exit needs."""
    return lambda pids: _settled(lambda: [pid for pid in pids if _alive(pid)])


@pytest.fixture
def processes_left() -> Callable[[str], List[Tuple[str, str]]]:
    """The processes of a finished run (marked by ``marker``) still there
    after the grace a clean exit needs."""
    return lambda marker: _settled(lambda: _processes_mentioning(marker))


def _shm_in_use() -> Set[str]:
    """/dev/shm names some live process has mapped or open."""
    used = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        used.update(
            line.split("/dev/shm/", 1)[1].split(" ")[0]
            for line in maps.splitlines()
            if "/dev/shm/" in line
        )
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("/dev/shm/"):
                used.add(target[len("/dev/shm/") :].split(" ")[0])
    return used


@pytest.fixture
def shm_left_since() -> Callable[[Set[str]], Set[str]]:
    """``/dev/shm`` entries created since ``before`` that no live process
    uses: what a finished run left behind (other runs on this machine keep
    theirs mapped while they live)."""

    def left(before: Set[str]) -> Set[str]:
        return _settled(lambda: set(os.listdir("/dev/shm")) - before - _shm_in_use())

    return left


@pytest.fixture
def marked_scripts(tmp_path) -> Callable[..., Path]:
    """Copies the named files of this folder into a fresh marker folder and
    returns the first one's path, with ``quiet_run.py`` (the scripts' shared
    overrides) beside them.  A script run from there has the folder on its
    sys.path, and so do the worker processes it starts: it marks every process
    of the run (see :func:`processes_mentioning`)."""

    def copy(*names: str) -> Path:
        marker_dir = tmp_path / "run_marker"
        marker_dir.mkdir()
        for name in (*names, "quiet_run.py"):
            shutil.copy(Path(__file__).with_name(name), marker_dir / name)
        return marker_dir / names[0]

    return copy
