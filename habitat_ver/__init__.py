"""habitat-ver: VER, DD-PPO and APPO trainers for habitat-baselines.

Importing this package enables sim-free mode when habitat-sim is missing (or
keeps the real habitat-sim's renderer loadable, see
:mod:`habitat_ver.compat.native_libs`) and
registers every trainer, storage, updater and policy with habitat-baselines'
registry (see :mod:`habitat_ver.registration`).  Nothing else runs at import.
"""

from habitat_ver.compat import sim_free as _sim_free

if not _sim_free.activate():
    from habitat_ver.compat import native_libs as _native_libs

    _native_libs.isolate_native_symbols()

from habitat_ver import registration as _registration  # noqa: E402

_registration.register_all()

__version__ = "0.1.0"
