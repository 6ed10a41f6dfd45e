"""system/ runs processes and buffers; the learning math stays out of it."""

import ast
from pathlib import Path

SYSTEM = Path(__file__).resolve().parents[2] / "habitat_ver" / "system"


def _imported_modules(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_system_imports_neither_algo_nor_updaters():
    found = {
        (path.name, module)
        for path in sorted(SYSTEM.glob("*.py"))
        for module in _imported_modules(path)
        if module.startswith(("habitat_ver.algo", "habitat_ver.updaters"))
    }
    assert len(list(SYSTEM.glob("*.py"))) > 5  # the folder was found
    assert found == set()
