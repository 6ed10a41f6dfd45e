"""The habitat-lab / habitat-baselines releases habitat-ver supports, checked at import.

habitat-lab's version numbers: a checkout of a ``v0.3.x`` tag installed with
``pip install -e`` reports ``0.3.x``; the PyPI nightlies report ``0.3.x``
followed by the build date (``0.3.320260507`` is a 0.3.3 build of 2026-05-07),
which sorts above every plain ``0.3.x``.  So the supported set is written as a
range plus exclusions of the older nightlies that sort inside it; the same
strings are in ``pyproject.toml`` (a test keeps them equal).

An older habitat-lab (found e.g. in a conda env, or installed with
``--no-deps``) would fail much later with an AttributeError deep inside a
trainer; :func:`check_habitat_versions` fails at ``import habitat_ver``
instead, naming what was found and what is supported.
"""

import sys
from typing import Dict, Optional

from importlib import metadata

# Python < 3.11: 0.3.2 and 0.3.3 (source checkouts and their nightlies).
SUPPORTED_BEFORE_PY311 = ">=0.3.2,<0.4,!=0.3.20231024"
# Python >= 3.11: only 0.3.3 imports there (older releases define a dataclass
# field with a mutable default, which 3.11 rejects).
SUPPORTED_PY311 = ">=0.3.3,<0.4,!=0.3.20231024,!=0.3.220241031,!=0.3.220241205"
CHECKED_DISTRIBUTIONS = ("habitat-lab", "habitat-baselines")


class UnsupportedHabitatError(ImportError):
    """An installed habitat-lab or habitat-baselines is outside the supported range."""


def supported_range(python_version: Optional[tuple] = None) -> str:
    """The PEP 440 specifier of supported habitat-lab/baselines versions."""
    version = sys.version_info[:2] if python_version is None else python_version
    return SUPPORTED_PY311 if tuple(version) >= (3, 11) else SUPPORTED_BEFORE_PY311


def installed_versions() -> Dict[str, str]:
    """The installed version of each checked distribution (absent ones left out)."""
    found = {}
    for name in CHECKED_DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # importing it fails on its own, with a clear message
    return found


def check_habitat_versions(found: Optional[Dict[str, str]] = None) -> None:
    """Raise :class:`UnsupportedHabitatError` for an unsupported habitat install.

    Args:
        found: ``{distribution: version}``; the installed ones by default.

    Raises:
        UnsupportedHabitatError: naming the distribution, the version found,
            the range supported and how to get a supported one.
    """
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    spec = SpecifierSet(supported_range())
    found = installed_versions() if found is None else found
    for name, version in found.items():
        try:
            ok = Version(version) in spec
        except InvalidVersion:
            ok = False
        if not ok:
            raise UnsupportedHabitatError(
                f"habitat-ver supports {name} {spec} on Python "
                f"{sys.version_info[0]}.{sys.version_info[1]}, but {name} {version} is "
                f"installed. Install a supported release: `pip install -e {name}` from a "
                f"checkout of habitat-lab's v0.3.3 tag (git checkout v0.3.3), or "
                f"`pip install '{name}{spec}'`."
            )
