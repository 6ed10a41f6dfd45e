"""habitat-ver: VER, DD-PPO and APPO trainers for habitat-baselines.

Importing this package checks the installed habitat-lab/habitat-baselines
versions, enables sim-free mode when habitat-sim is missing (or, with the real
habitat-sim, keeps its CPU renderer loadable: :mod:`habitat_ver.compat.native_libs`)
and registers every trainer, storage, updater and policy with habitat-baselines'
registry (see :mod:`habitat_ver.registration`).  Where the interpreter runs
one of our command lines or ``habitat_baselines.run``, it also keeps known
third-party noise off the console (:mod:`habitat_ver.common.filtered_console`).
Nothing else runs at import.
"""

from habitat_ver.common import filtered_console as _filtered_console

# Only under our command lines and habitat_baselines.run: known third-party
# noise off the console, before habitat-lab's imports print any.
_filtered_console.filter_command_line_noise()

from habitat_ver.compat import versions as _versions  # noqa: E402

_versions.check_habitat_versions()  # one clear error for an old habitat-lab

from habitat_ver.compat import sim_free as _sim_free  # noqa: E402

if not _sim_free.activate():
    # The real habitat-sim: triton's LLVM must be loaded before Mesa's, and
    # libraries loaded later must stay local.
    from habitat_ver.compat import native_libs as _native_libs

    _native_libs.guard_native_libraries()

from habitat_ver import registration as _registration  # noqa: E402

_registration.register_all()

__version__ = "0.1.0"
