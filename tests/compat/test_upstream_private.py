"""The upstream private names we depend on exist, every one our package uses
is listed, and every listed one is used.

The guard reads our whole package.  A ``_name`` (not ``__dunder__``) is an
upstream private name where it is

* a method defined, or an attribute read or set through ``self``/``cls``/
  ``super()``, in one of our classes that a habitat or habitat-baselines class
  of its bases defines itself (a method or class attribute, or
  ``self._name = ...`` in its source): a hook we override, a method we call,
  upstream's state.  Our own ``_`` names in those classes (no upstream base
  defines them) are not;
* an attribute of another object (``trainer._agent``), or a name imported from
  an upstream module, that upstream defines somewhere and that our package
  does not define as its own.

A use through ``self`` is covered by an entry of ``UPSTREAM_PRIVATE`` with the
same name whose owner is among the class's bases; any other use by an entry
with the same name.
"""

import ast
import functools
import importlib
import importlib.util
import inspect
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Mapping, NamedTuple, Optional, Set, Tuple

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_ver.compat.upstream_private import (
    CHECKED_VERSIONS,
    UPSTREAM_PRIVATE,
    UpstreamName,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "habitat_ver"
# The distributions whose private names we track (top-level packages).
UPSTREAM_PACKAGES = ("habitat", "habitat_baselines")
SELF_NAMES = ("self", "cls")
NAME_ACCESSORS = ("getattr", "setattr", "hasattr", "delattr")


def _owner(path):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _is_private(name: str) -> bool:
    # Not ``__dunder__``, nor a config key spelt like Hydra's ``_target_``.
    return name.startswith("_") and not name.startswith("__") and not name.endswith("_")


def _is_upstream(klass: type) -> bool:
    return klass.__module__.split(".")[0] in UPSTREAM_PACKAGES


@functools.lru_cache(maxsize=None)
def _defined_by(klass: type) -> FrozenSet[str]:
    """Names ``klass`` itself defines: its methods and class attributes, and
    the attributes its methods set on ``self``."""
    names = set(vars(klass))
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
    except (OSError, TypeError, SyntaxError):
        return frozenset(names)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            names.add(node.attr)
    return frozenset(names)


def _defines(owner, name):
    """``owner`` (a class, or one of its bases; or a module) defines ``name``."""
    if inspect.ismodule(owner):
        return hasattr(owner, name)
    return any(name in _defined_by(k) for k in inspect.getmro(owner) if k is not object)


@functools.lru_cache(maxsize=None)
def upstream_defined_names() -> FrozenSet[str]:
    """Every ``_name`` upstream's sources define anywhere: functions and
    classes, and names or attributes assigned."""
    names: Set[str] = set()
    for package in UPSTREAM_PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        for location in spec.submodule_search_locations:
            for path in sorted(Path(location).rglob("*.py")):
                names |= _names_defined(ast.parse(path.read_text(encoding="utf-8")))
    return frozenset(n for n in names if _is_private(n))


def _names_defined(tree: ast.AST) -> Set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return names


class Use(NamedTuple):
    """One use of a ``_name`` in our source."""

    module: str  # path under habitat_ver/, without .py
    line: int
    name: str
    # The class it is used through ``self`` in (None: another object, an
    # import, or a class defined inside a function).
    klass: Optional[type]


def _through_self(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in SELF_NAMES
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _is_upstream_module(module: Optional[str]) -> bool:
    return (module or "").split(".")[0] in UPSTREAM_PACKAGES


class _Reader(ast.NodeVisitor):
    """Collects the ``_name`` uses of one module, with their class."""

    def __init__(self, module: str, namespace: Mapping[str, object]):
        self.module = module
        self.namespace = namespace
        self.classes: List[Optional[type]] = []  # the enclosing classes, innermost last
        self.depth = 0  # enclosing functions
        self.self_uses: List[Use] = []  # through self/cls/super() in a class
        self.other_uses: List[Use] = []  # on another object, or imported from upstream
        self.defined: Set[str] = set()  # module- and class-level names defined here

    def _add(self, node: ast.AST, name: str, through_self: bool) -> None:
        if not _is_private(name):
            return
        klass = self.classes[-1] if self.classes else None
        use = Use(self.module, getattr(node, "lineno", 0), name, klass)
        if through_self and self.classes:
            self.self_uses.append(use)
        else:
            self.other_uses.append(use._replace(klass=None))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        klass = None
        if self.depth == 0 and not self.classes:
            found = self.namespace.get(node.name)
            klass = found if isinstance(found, type) else None
        if self.depth == 0:
            self.defined.add(node.name)
        self.classes.append(klass)
        outer, self.depth = self.depth, 0
        self.generic_visit(node)
        self.depth = outer
        self.classes.pop()

    def _visit_function(self, node) -> None:
        if self.depth == 0 and self.classes:
            self._add(node, node.name, through_self=True)
        elif self.depth == 0:
            self.defined.add(node.name)
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._visit_function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._visit_function(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store) and self.depth == 0:
            if self.classes:
                self._add(node, node.id, through_self=True)
            else:
                self.defined.add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._add(node, node.attr, _through_self(node.value))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in NAME_ACCESSORS and len(node.args) >= 2:
            target, name = node.args[0], node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                self._add(node, name.value, _through_self(target))
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if _is_upstream_module(node.module):
                self._add(node, alias.name, through_self=False)
            elif self.depth == 0 and not self.classes:
                self.defined.add(alias.asname or alias.name)


def upstream_uses(
    sources: Mapping[str, Tuple[str, Mapping[str, object]]],
    upstream_names: FrozenSet[str],
) -> List[Use]:
    """The uses of upstream private names in ``sources``.

    Args:
        sources: module path (under habitat_ver/, no ``.py``) -> (its source,
            its namespace, where its top-level classes are looked up).
        upstream_names: the ``_`` names upstream defines anywhere
            (:func:`upstream_defined_names`).

    Returns:
        Each use through ``self`` of a name an upstream base of the class
        defines, and each other use of a name upstream defines that our
        sources do not define as their own.
    """
    readers = []
    for module, (source, namespace) in sorted(sources.items()):
        reader = _Reader(module, namespace)
        reader.visit(ast.parse(source))
        readers.append(reader)
    uses: List[Use] = []
    ours: Set[str] = set()
    for reader in readers:
        ours |= reader.defined
        for use in reader.self_uses:
            if use.klass is None:  # a class we cannot resolve: judged by its name
                reader.other_uses.append(use)
            elif _upstream_definers(use.klass, use.name):
                uses.append(use)
            else:
                ours.add(use.name)
    for reader in readers:
        uses += [u for u in reader.other_uses if u.name in upstream_names and u.name not in ours]
    return sorted(uses, key=lambda u: (u.module, u.line, u.name))


def _upstream_definers(klass: type, name: str) -> List[type]:
    return [k for k in inspect.getmro(klass) if _is_upstream(k) and name in _defined_by(k)]


def _covers(entry: UpstreamName, use: Use) -> bool:
    if entry.name != use.name:
        return False
    return use.klass is None or _owner(entry.owner) in inspect.getmro(use.klass)


def unlisted(uses: Iterable[Use], entries: Iterable[UpstreamName]) -> List[str]:
    """``module:line name`` of each use no entry covers."""
    entries = list(entries)
    return [
        f"{u.module}:{u.line} {u.name}" for u in uses if not any(_covers(e, u) for e in entries)
    ]


def unused(uses: Iterable[Use], entries: Iterable[UpstreamName]) -> List[str]:
    """``owner.name`` of each private-named entry that covers no use."""
    uses = list(uses)
    return [
        f"{e.owner}.{e.name}"
        for e in entries
        if _is_private(e.name) and not any(_covers(e, u) for u in uses)
    ]


def _module_path(path: Path) -> str:
    return path.relative_to(PACKAGE).with_suffix("").as_posix()


@functools.lru_cache(maxsize=None)
def package_uses() -> Tuple[Use, ...]:
    """The upstream private names our whole package uses."""
    sources: Dict[str, Tuple[str, Mapping[str, object]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        sources[_module_path(path)] = (
            path.read_text(encoding="utf-8"),
            vars(importlib.import_module(name)),
        )
    return tuple(upstream_uses(sources, upstream_defined_names()))


# ------------------------------------------------------------------ the list


def test_each_listed_name_exists_on_the_installed_release():
    missing = [
        f"{entry.owner}.{entry.name}"
        for entry in UPSTREAM_PRIVATE
        if not _defines(_owner(entry.owner), entry.name)
    ]
    assert missing == []
    assert len({(e.owner, e.name) for e in UPSTREAM_PRIVATE}) == len(UPSTREAM_PRIVATE)
    assert {e.kind for e in UPSTREAM_PRIVATE} <= {"hook", "call", "state"}


def test_the_checked_releases_include_the_installed_one():
    for distribution, versions in CHECKED_VERSIONS.items():
        assert metadata.version(distribution) in versions, distribution


def test_every_upstream_private_name_our_package_uses_is_listed():
    assert unlisted(package_uses(), UPSTREAM_PRIVATE) == []


def test_every_listed_name_is_used():
    assert unused(package_uses(), UPSTREAM_PRIVATE) == []


def test_the_public_attributes_listed_for_a_private_class_are_used_where_listed():
    for entry in UPSTREAM_PRIVATE:
        if _is_private(entry.name):
            continue
        assert _is_private(entry.owner.rpartition(".")[2]), entry
        path = PACKAGE / f"{entry.used_in}.py"
        attrs = {
            n.attr for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Attribute)
        }
        assert entry.name in attrs, entry


def test_the_scan_reads_the_whole_package():
    # The checks above would pass vacuously if the scan found nothing, or
    # only the trainers.
    modules = {use.module for use in package_uses()}
    assert {"trainers/ddppo", "updaters/ppo", "skills/nav", "tools/make_hab_dataset"} <= modules
    names = {use.name for use in package_uses() if use.module == "trainers/ddppo"}
    assert {"_collect_environment_result", "_compute_actions_and_step_envs"} <= names


# ----------------------------------------------------- the guard on a snippet

SNIPPET = """
from habitat.core.vector_env import _ReadWrapper
from habitat_baselines.rl.ppo.ppo import PPO


class Updater(PPO):
    def _update_from_batch(self, batch, epoch, rollouts, learner_metrics):
        self._set_grads_to_none()
        self._steps_done = 1

    def _own_helper(self):
        return self._steps_done


def reach(trainer, updater):
    return trainer._agent, updater._own_helper(), getattr(trainer, "_ppo_cfg")
"""


def _snippet_uses():
    namespace: Dict[str, object] = {}
    exec(compile(SNIPPET, "<snippet>", "exec"), namespace)  # our own text
    return upstream_uses({"snippet": (SNIPPET, namespace)}, upstream_defined_names())


def test_the_scan_tells_upstream_private_names_from_ours():
    found = [(u.name, u.klass is not None) for u in _snippet_uses()]
    assert found == [
        ("_ReadWrapper", False),
        ("_update_from_batch", True),
        ("_set_grads_to_none", True),
        ("_agent", False),
        ("_ppo_cfg", False),
    ]


def test_the_guard_fails_on_an_unlisted_name_and_on_an_unused_entry():
    ppo = "habitat_baselines.rl.ppo.ppo.PPO"
    trainer = "habitat_baselines.rl.ppo.ppo_trainer.PPOTrainer"
    entries = [
        UpstreamName("habitat.core.vector_env", "_ReadWrapper", "call", "snippet"),
        UpstreamName(ppo, "_update_from_batch", "hook", "snippet"),
        UpstreamName(trainer, "_agent", "state", "snippet"),
        UpstreamName(trainer, "_ppo_cfg", "state", "snippet"),
    ]
    uses = _snippet_uses()
    assert unlisted(uses, entries) == ["snippet:8 _set_grads_to_none"]
    assert unused(uses, entries) == []
    extra = UpstreamName(ppo, "_evaluate_actions", "call", "snippet")
    assert unused(uses, entries + [extra]) == [f"{ppo}._evaluate_actions"]
    # A name listed for an owner outside the class's bases does not cover a use through self.
    elsewhere = UpstreamName("habitat.core.vector_env.VectorEnv", "_set_grads_to_none", "call", "")
    assert unlisted(uses, entries + [elsewhere]) == ["snippet:8 _set_grads_to_none"]
