"""A misspelled ``--config-name``: the nearest names of our config tree.

Hydra answers an unknown primary config with its search path (about 20
lines) and no suggestion.  ``python -m habitat_ver.run`` replaces that with
:func:`unknown_config_line`; under ``python -m habitat_baselines.run``, whose
errors Hydra prints itself, our search-path plugin prints the same line first
(:func:`hint_unknown_config`), only when no folder of the search path has the
config.
"""

import difflib
import sys
from typing import Any, List, Optional, Sequence

__all__ = ["nearest_config_names", "unknown_config_line", "hint_unknown_config"]

# difflib's similarity ratio a suggestion needs (its default): "ver_pik" ->
# "ver_pick" passes, unrelated names do not.
_CUTOFF = 0.6
_hinted = False  # Hydra builds the search path more than once per run


def nearest_config_names(name: str, names: Sequence[str], limit: int = 3) -> List[str]:
    """The ``limit`` names of ``names`` most similar to ``name``, best first
    (``.yaml`` ignored); none below difflib's similarity ratio 0.6."""
    name = name[: -len(".yaml")] if name.endswith(".yaml") else name
    return difflib.get_close_matches(name, list(names), n=limit, cutoff=_CUTOFF)


def unknown_config_line(name: str) -> str:
    """One line: ``name`` is no config, and the nearest of our tree's."""
    from habitat_ver.config.compose import config_names

    nearest = nearest_config_names(name, config_names())
    if nearest:
        return f"--config-name={name}: no such config; did you mean {', '.join(nearest)}?"
    groups = sorted({n.split("/")[0] for n in config_names() if "/" in n})
    folders = ", ".join(group + "/" for group in groups)
    return f"--config-name={name}: no such config; habitat-ver's are in {folders}"


def requested_config_name(argv: Sequence[str]) -> Optional[str]:
    """The ``--config-name``/``-cn`` value of a command line, or None."""
    for index, arg in enumerate(argv):
        for flag in ("--config-name", "-cn"):
            if arg.startswith(flag + "="):
                return arg[len(flag) + 1 :]
            if arg == flag and index + 1 < len(argv):
                return argv[index + 1]
    return None


def hint_unknown_config(search_path: Any, argv: Optional[Sequence[str]] = None) -> None:
    """Print :func:`unknown_config_line` on stderr when the command line's
    config is in no folder of ``search_path`` (a Hydra ``ConfigSearchPath``)
    and is near one of ours."""
    global _hinted
    name = requested_config_name(sys.argv[1:] if argv is None else argv)
    if name is None or _hinted:
        return
    from hydra._internal.config_repository import ConfigRepository

    if ConfigRepository(config_search_path=search_path).config_exists(name):
        return
    from habitat_ver.config.compose import config_names

    # Only a near miss of ours: another plugin may add the folder it is in.
    if nearest_config_names(name, config_names()):
        _hinted = True
        print(f"habitat_ver: {unknown_config_line(name)}", file=sys.stderr)
