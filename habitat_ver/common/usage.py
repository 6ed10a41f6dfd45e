"""Ending a command-line run with one error line and exit status 2.

``python -m habitat_ver.run`` reports configuration errors this way itself.
``python -m habitat_baselines.run`` (upstream's entry point, which runs our
trainers) does not: Hydra prints the traceback of any exception.  Errors that
mean "this cannot run here" (habitat-sim or downloaded data missing) are
therefore turned into this exit at trainer start, so both commands end the same
way.
"""

import os
import sys
from typing import NoReturn

USAGE_EXIT_CODE = 2


def program_name() -> str:
    """``habitat_baselines.run`` / ``habitat_ver.run`` for ``python -m``, else argv[0]."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name:
        return spec.name
    return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "habitat_ver"


def exit_with_usage_error(error: BaseException) -> NoReturn:
    """Print ``<program>: error: <error>`` on stderr and exit with status 2."""
    print(f"{program_name()}: error: {error}", file=sys.stderr)
    sys.exit(USAGE_EXIT_CODE)
