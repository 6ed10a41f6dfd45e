"""The upstream private names we depend on exist, and every one is listed."""

import ast
import importlib
import inspect
import re
from importlib import metadata
from pathlib import Path

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_ver.compat.upstream_private import CHECKED_VERSIONS, UPSTREAM_PRIVATE

ROOT = Path(__file__).resolve().parents[2]
# Our modules built on upstream's classes (subclasses, or users of their state).
BUILT_ON_UPSTREAM = sorted((ROOT / "habitat_ver" / "trainers").glob("*.py")) + [
    ROOT / "habitat_ver" / "system" / "vector_env.py",
    ROOT / "habitat_ver" / "compat" / "upstream_private.py",
]


def _owner(path):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _defines(cls, name):
    """``cls`` (or a base) has ``name`` as a class attribute, or sets
    ``self.name`` in its source."""
    if hasattr(cls, name):
        return True
    pattern = re.compile(rf"self\.{re.escape(name)}\s*(:[^=\n]+)?=[^=]")
    for klass in inspect.getmro(cls):
        if klass is object:
            continue
        try:
            if pattern.search(inspect.getsource(klass)):
                return True
        except (OSError, TypeError):
            continue
    return False


def test_each_listed_name_exists_on_the_installed_release():
    missing = [
        f"{entry.owner}.{entry.name}"
        for entry in UPSTREAM_PRIVATE
        if not _defines(_owner(entry.owner), entry.name)
    ]
    assert missing == []
    assert len({(e.owner, e.name) for e in UPSTREAM_PRIVATE}) == len(UPSTREAM_PRIVATE)


def test_the_checked_releases_include_the_installed_one():
    for distribution, versions in CHECKED_VERSIONS.items():
        assert metadata.version(distribution) in versions, distribution


def _private_names_used(path):
    """``_name`` attributes read or set, and ``_name`` methods defined, in ``path``."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_every_upstream_private_name_our_trainers_use_is_listed():
    owners = {entry.owner for entry in UPSTREAM_PRIVATE}
    listed = {entry.name for entry in UPSTREAM_PRIVATE}
    upstream = [_owner(owner) for owner in sorted(owners)]
    unlisted = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in BUILT_ON_UPSTREAM
        for name in _private_names_used(path) - listed
        if any(_defines(cls, name) for cls in upstream)
    )
    assert unlisted == []


def test_the_scan_finds_an_upstream_name_in_our_code():
    # The check above would pass vacuously if the scan found nothing.
    used = _private_names_used(ROOT / "habitat_ver" / "trainers" / "ddppo.py")
    assert {"_collect_environment_result", "_compute_actions_and_step_envs"} <= used
