"""Ending a command-line run with one error line and exit status 2.

``python -m habitat_ver.run`` reports configuration errors this way itself.
``python -m habitat_baselines.run`` (upstream's entry point, which runs our
trainers) does not: Hydra prints the traceback of any exception.  Errors that
mean "this cannot run here" (habitat-sim or downloaded data missing) are
therefore turned into this exit at trainer start, so both commands end the same
way; under ``habitat_baselines.run`` every configuration error is
(:func:`usage_errors_exit`).  So is Ctrl-C: one line and status 130
(:func:`interrupt_exits`), where upstream's command printed a traceback.
"""

import contextlib
import os
import sys
from typing import Callable, Iterator, NoReturn, Tuple, Type

USAGE_EXIT_CODE = 2
INTERRUPTED_EXIT_CODE = 130  # the shell's code for SIGINT


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


UPSTREAM_CLI = "habitat_baselines.run"


@contextlib.contextmanager
def usage_errors_exit(errors: Tuple[Type[BaseException], ...]) -> Iterator[None]:
    """Under ``habitat_baselines.run``, ``errors`` raised in the block end the
    process with :func:`exit_with_usage_error` (elsewhere they propagate:
    ``habitat_ver.run`` and callers of the API handle them)."""
    try:
        yield
    except errors as error:
        if program_name() != UPSTREAM_CLI:
            raise
        exit_with_usage_error(error)


@contextlib.contextmanager
def interrupt_exits(where: Callable[[], str]) -> Iterator[None]:
    """Under ``habitat_baselines.run``, Ctrl-C (KeyboardInterrupt) raised in the
    block, after the block's own clean-up ran, ends the process with
    ``habitat_baselines.run: interrupted <where()>; restart the same command
    to resume`` and status 130, as ``habitat_ver.run`` does (elsewhere it
    propagates)."""
    try:
        yield
    except KeyboardInterrupt:
        if program_name() != UPSTREAM_CLI:
            raise
        exit_interrupted(UPSTREAM_CLI, f" {where()}")


def exit_interrupted(program: str, where: str = "") -> NoReturn:
    """Print ``<program>: interrupted<where>; restart the same command to
    resume ...`` on stderr and exit with status 130 (both commands' Ctrl-C)."""
    print(
        f"{program}: interrupted{where}; restart the same command to resume "
        "from the last resume state",
        file=sys.stderr,
    )
    sys.exit(INTERRUPTED_EXIT_CODE)
