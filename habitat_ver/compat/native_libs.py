"""One guard against one crash: two LLVMs in the process that renders.

habitat-sim renders on the CPU through Mesa's llvmpipe, which loads the system
LLVM.  PyTorch ships triton (loaded by habitat-baselines through
torch._dynamo and by torchvision), whose ``libtriton.so`` carries a second
copy.  When both register their command-line options in one symbol space,
creating the first GL context aborts the process with ``LLVM ERROR: Option
'default' already exists!`` (checked with habitat-sim 0.3.3, Mesa 22.3.6,
triton from torch's wheel).  Two things make them meet, and ``import
habitat_ver`` undoes both (:func:`guard_native_libraries`) before anything
imports habitat-sim:

* triton loaded *after* habitat-sim: :func:`load_triton_first` loads it first;
* Corrade's Python package (imported by habitat-sim and magnum) switches the
  interpreter's ``dlopen`` flags to ``RTLD_GLOBAL`` for good, so every later
  library exports its symbols to the whole process:
  :func:`isolate_native_symbols` imports habitat-sim's bindings, then clears
  the flag again (the Magnum modules, already loaded, keep what they need).

Forkserver children (habitat's ``VectorEnv`` workers and ours) do not re-run
the parent's imports: :func:`forkserver_context` makes every forkserver import
:mod:`habitat_ver` first, which also puts the workers in sim-free mode where
habitat-sim is missing (and gives them one torch thread).
"""

import importlib.util
import multiprocessing
import os
import sys
from typing import Any

# Imported by each forkserver before it forks a worker: the package (sim-free
# mode or this guard), then the module that gives workers one torch thread.
FORKSERVER_PRELOAD = ["habitat_ver", "habitat_ver.system.forkserver_preload"]


def forkserver_context() -> Any:
    """The forkserver multiprocessing context, its server preloading
    :mod:`habitat_ver` (sim-free mode, or this guard, in every worker) and
    one torch thread for every worker (:mod:`habitat_ver.system.worker_threads`)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(FORKSERVER_PRELOAD)
    return context


def load_triton_first() -> bool:
    """Import triton if it is installed and habitat-sim is not loaded yet.

    Returns:
        True when triton is loaded ahead of habitat-sim.
    """
    if "triton" in sys.modules:
        return "habitat_sim" not in sys.modules or _loaded_before("triton", "habitat_sim")
    if "habitat_sim" in sys.modules or importlib.util.find_spec("triton") is None:
        return False
    import triton  # noqa: F401

    return True


def _loaded_before(first: str, second: str) -> bool:
    names = list(sys.modules)
    return names.index(first) < names.index(second)


def isolate_native_symbols() -> None:
    """Load habitat-sim's bindings, then stop loading libraries globally.

    Only called where the real habitat-sim is importable.  Idempotent.
    """
    import corrade  # noqa: F401  (sets RTLD_GLOBAL; must come first)
    import magnum  # noqa: F401

    sys.setdlopenflags(sys.getdlopenflags() & ~os.RTLD_GLOBAL)


def guard_native_libraries() -> None:
    """Both measures, in order, and forkserver workers that take them too.

    Only called where the real habitat-sim is importable.
    """
    load_triton_first()
    isolate_native_symbols()
    forkserver_context()
