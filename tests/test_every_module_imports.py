"""Every module of the package imports, in a fresh interpreter.

The Python 3.9 session (``make test-py39``) runs a subset of the suite; this
test is its guarantee that no module anywhere uses syntax, a runtime-evaluated
annotation or a torch/stdlib name that the oldest supported versions lack,
including modules no test of that subset reaches.
"""

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import habitat_ver

ROOT = Path(__file__).resolve().parents[1]
# Imports each module on its own and reports the ones that raise (name -> error).
IMPORT_ALL = """
import importlib, json, pkgutil, sys
import habitat_ver
failed = {}
for info in pkgutil.walk_packages(habitat_ver.__path__, "habitat_ver."):
    try:
        importlib.import_module(info.name)
    except Exception as error:  # noqa: BLE001 - every failure is the report
        failed[info.name] = f"{type(error).__name__}: {error}"
for name in ("hydra_plugins.habitat_ver_plugin",):
    try:
        importlib.import_module(name)
    except Exception as error:  # noqa: BLE001
        failed[name] = f"{type(error).__name__}: {error}"
print("IMPORTED", json.dumps(failed))
"""


def _module_count() -> int:
    return sum(1 for _ in pkgutil.walk_packages(habitat_ver.__path__, "habitat_ver."))


def test_every_module_imports():
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("IMPORTED ")]
    assert json.loads(line[len("IMPORTED ") :]) == {}
    # The walk saw the whole package, not an empty or partial path.
    assert _module_count() > 50
