"""Run ``python -m <module> <args...>`` as if habitat-sim were not installed.

Usage: ``python run_without_habitat_sim.py habitat_ver.run --config-name=...``.
The path finder stops seeing habitat-sim's packages, so habitat-ver's sim-free
mode switches on exactly as on a machine without the wheel.
"""

import runpy
import sys
from importlib.machinery import PathFinder

HIDDEN = ("habitat_sim", "magnum", "corrade", "_magnum", "_corrade")


class HidingPathFinder:
    """``PathFinder`` that does not find habitat-sim's top-level packages."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            return None
        return PathFinder.find_spec(name, path, target)

    @staticmethod
    def find_distributions(*args, **kwargs):
        # importlib.metadata asks meta-path finders for installed distributions.
        return PathFinder.find_distributions(*args, **kwargs)

    @staticmethod
    def invalidate_caches():
        PathFinder.invalidate_caches()


if __name__ == "__main__":
    sys.meta_path[sys.meta_path.index(PathFinder)] = HidingPathFinder
    module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
