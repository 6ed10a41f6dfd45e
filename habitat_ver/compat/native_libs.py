"""Keep habitat-sim's CPU renderer and PyTorch's Triton from sharing LLVM symbols.

Corrade's Python package (imported by habitat-sim and magnum) switches the
interpreter's ``dlopen`` flags to ``RTLD_GLOBAL`` for good.  Every shared
library loaded after that exports its symbols to the whole process, among
them ``libtriton.so`` (loaded by torchvision/torch._dynamo), which carries
its own copy of LLVM.  When habitat-sim then renders on the CPU, Mesa's
llvmpipe loads the system LLVM, whose command-line options are already
registered by Triton's copy, and the process aborts with
``LLVM ERROR: Option 'default' already exists!``.

:func:`isolate_native_symbols` imports habitat-sim's bindings first and then
clears ``RTLD_GLOBAL`` again, so libraries loaded afterwards stay local (the
Magnum modules, already loaded, keep what they need).  It also makes every
forkserver child (habitat's ``VectorEnv`` workers, ours too) start from a
process that ran it, because those children do not re-run the parent's
imports.
"""

import multiprocessing
import os
import sys

# Imported by each forkserver before it forks a worker; importing habitat_ver
# runs isolate_native_symbols (see habitat_ver/__init__.py).
FORKSERVER_PRELOAD = "habitat_ver"


def isolate_native_symbols() -> None:
    """Load habitat-sim's bindings, then stop loading libraries globally.

    Only called where the real habitat-sim is importable.  Idempotent.
    """
    import corrade  # noqa: F401  (sets RTLD_GLOBAL; must come first)
    import magnum  # noqa: F401

    sys.setdlopenflags(sys.getdlopenflags() & ~os.RTLD_GLOBAL)
    multiprocessing.get_context("forkserver").set_forkserver_preload([FORKSERVER_PRELOAD])
