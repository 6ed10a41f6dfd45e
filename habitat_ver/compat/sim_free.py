"""Sim-free mode: load habitat-lab's pure-Python layers without habitat-sim.

habitat-lab imports its compiled dependencies (``habitat_sim``, ``magnum``,
``corrade``) at module level, so on a machine without habitat-sim (a laptop,
CI) not even ``import habitat`` works.  When ``import habitat_sim`` fails, this
module installs *stand-in* modules under those names before habitat-lab is
imported.  A stand-in lets class definitions, decorators and annotations
evaluate, which is all the registry, config, trainer and gym layers need.

What a stand-in never does is pretend to simulate: every entry point that
would construct a simulator is wrapped (see :func:`guard_simulator_entry_points`)
to raise :class:`HabitatSimRequiredError` at once, so the user gets one clear
message instead of an ``AttributeError`` deep inside a stand-in.

The switch is decided by importability (:func:`habitat_sim_available`);
where habitat-sim is installed nothing here runs, unless the environment
variable ``HABITAT_VER_SIM_FREE=1`` forces sim-free mode (so that the sim-free
tests and the embedded environments behave the same with and without the
wheel).
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
import warnings
from typing import Any, Dict, Optional, Sequence

# Top-level compiled packages habitat-lab imports that only habitat-sim's conda
# package provides.
STAND_IN_PACKAGES = ("habitat_sim", "magnum", "corrade")
# Set to 1 to run on stand-ins even where habitat-sim is installed.
FORCE_ENV_VAR = "HABITAT_VER_SIM_FREE"

INSTALL_HINT = (
    "habitat-sim is a conda package, not on PyPI: install it with "
    "`conda install habitat-sim -c conda-forge -c aihabitat` "
    "(add `withbullet` for rearrangement tasks; see "
    "https://github.com/facebookresearch/habitat-sim#installation). "
    "Without it, habitat-ver runs the embedded environments "
    "(habitat.env_task=GymRegistryEnv, e.g. --config-name=doom/ver_my_way_home)."
)


class HabitatSimRequiredError(RuntimeError):
    """Raised when sim-free mode is asked for something only habitat-sim has."""

    def __init__(self, what: str):
        if forced():
            why = (
                f"this needs the real simulator, and {FORCE_ENV_VAR}=1 forces sim-free "
                "mode (stand-ins even where habitat-sim is installed): unset it. If "
                "habitat-sim is not installed: "
            )
        else:
            why = "habitat-sim is not installed, and this needs the real simulator. "
        super().__init__(f"{what}: {why}{INSTALL_HINT}")


class _StandInMeta(type):
    """Metaclass so that attribute access on a stand-in *class* also works."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stand_in_class(f"{cls.__qualname__}.{name}")

    def __or__(cls, other: Any) -> Any:  # `mn.Vector3 | None` in annotations
        return cls

    __ror__ = __or__

    def __getitem__(cls, item: Any) -> Any:  # `Foo[int]` in annotations
        return cls


class _StandIn(metaclass=_StandInMeta):
    """Base of every stand-in class.

    Instances accept any construction and return further stand-ins for any
    attribute, call, item or arithmetic, so module-level code (default
    arguments, enum tables, decorators) evaluates.  None of it reaches a
    simulator: those entry points are guarded separately.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _StandIn()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Used as a decorator at import time: hand the decorated object back.
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _StandIn()

    def __getitem__(self, item: Any) -> Any:
        return _StandIn()

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False

    def __float__(self) -> float:
        return 0.0

    def __int__(self) -> int:
        return 0

    __index__ = __int__

    def __repr__(self) -> str:
        return f"<habitat-sim stand-in {type(self).__qualname__}>"

    def _binary(self, other: Any) -> Any:
        return _StandIn()

    __add__ = __radd__ = __sub__ = __rsub__ = _binary
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __matmul__ = _binary
    __neg__ = __pos__ = lambda self: _StandIn()

    def __eq__(self, other: Any) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


_CLASS_CACHE: Dict[str, type] = {}


def _stand_in_class(qualname: str) -> type:
    """One stand-in class per dotted name, so identity checks stay stable."""
    cls = _CLASS_CACHE.get(qualname)
    if cls is None:
        cls = _StandInMeta(qualname.rsplit(".", 1)[-1], (_StandIn,), {})
        cls.__qualname__ = qualname
        cls.__module__ = qualname.rsplit(".", 1)[0] if "." in qualname else qualname
        _CLASS_CACHE[qualname] = cls
    return cls


class StandInModule(types.ModuleType):
    """A module whose every missing attribute is a stand-in class."""

    __habitat_ver_stand_in__ = True

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _stand_in_class(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``habitat_sim``, ``magnum``, ``corrade`` and all their submodules."""

    def __init__(self, packages: Sequence[str]):
        self._packages = tuple(packages)

    def _serves(self, fullname: str) -> bool:
        return fullname.split(".", 1)[0] in self._packages

    def find_spec(self, fullname, path=None, target=None):
        if not self._serves(fullname):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = StandInModule(spec.name)
        module.__path__ = []  # a package, so `import magnum.scenegraph` works
        return module

    def exec_module(self, module):
        # Plain data that habitat-lab reads at import time.
        if module.__name__ == "habitat_sim":
            module.__version__ = "0.0.0+stand-in"
        elif module.__name__ == "magnum":
            module.__version__ = "0.0.0+stand-in"


_FINDER: Optional[_StandInFinder] = None


def forced() -> bool:
    """True when ``HABITAT_VER_SIM_FREE=1`` asks for sim-free mode."""
    return os.environ.get(FORCE_ENV_VAR, "") == "1"


def habitat_sim_available() -> bool:
    """True when the real habitat-sim can be imported (sim-free mode stays off)."""
    if _FINDER is not None or forced():
        return False
    if "habitat_sim" in sys.modules:
        return real_habitat_sim_loaded()
    return importlib.util.find_spec("habitat_sim") is not None


def real_habitat_sim_loaded() -> bool:
    """True when the real habitat-sim has been imported into this process."""
    module = sys.modules.get("habitat_sim")
    return module is not None and not getattr(module, "__habitat_ver_stand_in__", False)


def real_habitat_sim_installed() -> bool:
    """True when the real habitat-sim is on the path, even in forced sim-free mode.

    Looks past the stand-in finder without importing anything, so a test
    session running sim-free can still tell whether simulator tests can run
    (in subprocesses without ``HABITAT_VER_SIM_FREE``).
    """
    if real_habitat_sim_loaded():
        return True
    return importlib.machinery.PathFinder.find_spec("habitat_sim") is not None


def is_active() -> bool:
    """True when this process runs habitat-lab on stand-ins."""
    return _FINDER is not None


def activate() -> bool:
    """Install the stand-ins when habitat-sim is missing.

    Must run before the first ``import habitat``.  Idempotent.

    Returns:
        True when sim-free mode is active after the call.
    """
    global _FINDER
    if _FINDER is not None:
        return True
    if habitat_sim_available():
        return False
    if "habitat" in sys.modules:
        if forced() and real_habitat_sim_loaded():
            # `python -m habitat_baselines.run` imports habitat (and with it the
            # real habitat-sim) before Hydra's plugin scan imports habitat_ver.
            warnings.warn(
                f"{FORCE_ENV_VAR}=1 has no effect here: habitat was imported with the "
                "real habitat-sim before habitat_ver (habitat_baselines.run does that); "
                "use `python -m habitat_ver.run` to force sim-free mode",
                stacklevel=2,
            )
            return False
        raise RuntimeError(
            "habitat was imported before habitat_ver could enable sim-free mode; "
            "import habitat_ver (or run `python -m habitat_ver.run`) first"
        )
    _FINDER = _StandInFinder(STAND_IN_PACKAGES)
    sys.meta_path.insert(0, _FINDER)
    return True


def _refuse(what: str):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise HabitatSimRequiredError(what)

    return refuse


def guard_simulator_entry_points() -> None:
    """Make every path that would build a simulator raise a clear error.

    Called after habitat is imported in sim-free mode.  Covers habitat's
    ``make_sim`` (used by ``habitat.Env``) and the simulator registry, so
    ``Sim-v0``, ``RearrangeSim-v0`` and any other registered simulator fail the
    same way.
    """
    import habitat.core.env as habitat_env
    import habitat.sims as habitat_sims
    from habitat.core.registry import registry

    refuse_make = _refuse("Creating a habitat simulator")
    habitat_sims.make_sim = refuse_make
    habitat_env.make_sim = refuse_make

    def get_simulator(name: str) -> Any:
        return _refuse(f"Simulator {name!r}")

    # Deliberately patched: habitat's registry has no hook to refuse a simulator.
    registry.get_simulator = get_simulator  # type: ignore[method-assign]
