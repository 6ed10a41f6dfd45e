"""Load triton's LLVM before habitat-sim's renderer can meet it.

habitat-sim renders on the CPU through Mesa's llvmpipe, which brings its own
LLVM.  torch ships triton, a second LLVM; habitat-baselines imports it (through
torch._dynamo).  When triton's library is loaded *after* habitat-sim, creating
the first GL context aborts the process with ``LLVM ERROR: Option 'default'
already exists!`` (both register the same command-line option); loaded
before habitat-sim, both work (checked with habitat-sim 0.3.3, Mesa 22.3.6,
triton from torch's wheel).  :func:`load_triton_first` is called by
``import habitat_ver`` before anything imports habitat-sim.
"""

import importlib.util
import sys


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
