"""Fixtures of the worker-process tests."""

import os
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
