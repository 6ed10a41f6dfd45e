"""The package's import graph: no loop, and the layers of docs/ARCHITECTURE.md.

Read from the source with ``ast``, nothing imported.  An edge is one explicit
``import`` statement, wherever it stands: at module level or inside a function
(an import deferred into a function still runs, only later, and still ties the
two modules together).  Imports under ``if TYPE_CHECKING:`` never run and are
left out.  So is the implicit import of a package's ``__init__`` that Python
runs before any module of the package: ``habitat_ver/__init__.py`` is the
composition root (it registers every trainer, storage and policy), so counting
that edge would put every module in one loop by construction.
"""

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("habitat_ver", "hydra_plugins")

# Layer -> layers it must not import (docs/ARCHITECTURE.md, "What may import what").
FORBIDDEN = {
    "habitat_ver.algo": ("habitat_ver.trainers", "habitat_ver.distributed"),
    "habitat_ver.storage": ("habitat_ver.trainers", "habitat_ver.distributed"),
    # system/ runs processes and buffers: the learning math stays out of it.
    "habitat_ver.system": (
        "habitat_ver.trainers",
        "habitat_ver.distributed",
        "habitat_ver.algo",
        "habitat_ver.updaters",
    ),
    # config/ is the ground floor: each component checks its own settings
    # (habitat_ver.config.settings_checks), so the schema and validation
    # import no learning code.
    "habitat_ver.config": (
        "habitat_ver.trainers",
        "habitat_ver.distributed",
        "habitat_ver.algo",
        "habitat_ver.updaters",
        "habitat_ver.system",
        "habitat_ver.storage",
        "habitat_ver.policies",
        "habitat_ver.skills",
        "habitat_ver.envs",
    ),
}


def _module_names() -> Dict[str, Path]:
    names = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names[".".join(parts)] = path
    return names


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(tree: ast.AST, this: str, is_package: bool, known: Set[str]) -> Set[str]:
    """Our modules imported by the statements of ``tree``."""
    found: Set[Optional[str]] = set()

    def ours(name: str) -> Optional[str]:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(ours(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = this if is_package else this.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            found.update(ours(f"{base}.{alias.name}") for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {name for name in found if name is not None and name != this}


def import_graph() -> Dict[str, Set[str]]:
    """Module -> the modules of ours it imports."""
    names = _module_names()
    known = set(names)
    return {
        name: _imported(
            ast.parse(path.read_text(), str(path)), name, path.name == "__init__.py", known
        )
        for name, path in names.items()
    }


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One import loop as ``[a, b, ..., a]``, or None (depth-first search)."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: finished
    path: List[str] = []

    def visit(node: str) -> Optional[List[str]]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def test_the_graph_reader_sees_deferred_imports_and_loops():
    known = {"p", "p.a", "p.b", "p.c"}
    tree = ast.parse(
        "import p.a\n"
        "from p import b\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from p import c\n"
        "def f():\n    from p.b import thing\n"
    )
    assert _imported(tree, "p.x", False, known) == {"p.a", "p.b"}
    assert _imported(ast.parse("def f():\n    from . import c\n"), "p.a", False, known) == {"p.c"}
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_package_has_no_import_loop():
    graph = import_graph()
    assert "habitat_ver.trainers.ver" in graph  # the reader found the package
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_lower_layers_import_no_trainer_and_no_distributed_code():
    offences = [
        f"{module} imports {target}"
        for module, targets in sorted(import_graph().items())
        for layer, forbidden in FORBIDDEN.items()
        if module == layer or module.startswith(layer + ".")
        for target in sorted(targets)
        if target.startswith(forbidden)
    ]
    assert offences == []
