"""A run's console through the noise filter (:mod:`habitat_ver.common.noise_filter`).

:func:`filter_command_line_noise`, called by ``import habitat_ver`` (and by
``habitat_ver.run``'s ``main``), does something only where the interpreter
runs one of our command lines or ``habitat_baselines.run``
(:func:`command_module`): it sets ``MAGNUM_LOG=quiet`` unless set (Magnum's GL
context report, 24 lines per env on stdout), and points descriptor 2 of this
process at a pipe read by the filter process.  Processes started later (the
forkserver, env workers) inherit the descriptor, so their output is filtered
too, once, by the same filter.  At exit the run waits until the filter has
printed its last line.

``HABITAT_VER_SHOW_NOISE=1`` turns all of this off.  Under
``python -m habitat_baselines.run`` the lines printed while habitat-baselines
imports habitat-lab (gym's banner, Magnum's plugin notices: 9 lines) come
before our Hydra plugin is loaded and stay; ``habitat_ver.run`` and our tools
have none.
"""

import atexit
import os
import select
import subprocess
import sys
from typing import NamedTuple, Optional

from habitat_ver.common.noise_filter import SHOW_ENV_VAR, SYNC

# Set to the identity of the filtered descriptor ("<device>:<inode>"): a
# process whose stderr is that pipe is filtered already.
FILTERED_ENV_VAR = "HABITAT_VER_NOISE_FILTERED"
# Command lines whose console is filtered: ``python -m <module>``.
COMMAND_MODULES = ("habitat_ver.run", "habitat_baselines.run")
COMMAND_PACKAGES = ("habitat_ver.tools.",)
CONSOLE_SCRIPTS = ("habitat-ver-run",)
# The filter process's script (run by path, with the standard library only).
FILTER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "noise_filter.py")
# At exit the run waits at most this long for the filter's answer to SYNC.
EXIT_WAIT_SECONDS = 5.0


def command_module() -> Optional[str]:
    """The module of ``python -m <module>`` (or the console script's name)
    this interpreter runs, if it was started that way."""
    argv = list(getattr(sys, "orig_argv", []) or [])
    options = iter(argv[1:])
    for arg in options:
        if arg == "-m":
            return next(options, None)
        if arg.startswith("-m"):
            return arg[2:]
        if arg.startswith("-c"):
            return None
        if arg in ("-W", "-X", "--check-hash-based-pycs"):
            next(options, None)  # the option's value
        elif not arg.startswith("-"):  # a script
            return os.path.basename(arg)
    # Python 3.9 has no orig_argv: the running __main__ module, once it runs.
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return spec.name if spec is not None else None


def is_filtered_command(module: Optional[str]) -> bool:
    """Whether ``module`` (see :func:`command_module`) is a command line
    whose console is filtered."""
    if module is None:
        return False
    return (
        module in COMMAND_MODULES
        or module.startswith(COMMAND_PACKAGES)
        or module in CONSOLE_SCRIPTS
    )


def _descriptor_id(fd: int) -> str:
    stat = os.fstat(fd)
    return f"{stat.st_dev}:{stat.st_ino}"


def filtering() -> bool:
    """Whether this process's stderr goes through a noise filter."""
    try:
        return os.environ.get(FILTERED_ENV_VAR) == _descriptor_id(2)
    except OSError:
        return False


def filter_command_line_noise() -> bool:
    """Filter this process's console (see the module docstring) when the
    interpreter runs one of our command lines or ``habitat_baselines.run``.

    Returns:
        True when this call started a filter.
    """
    if not is_filtered_command(command_module()):
        return False
    return install()


def install() -> bool:
    """Route descriptor 2 of this process (and of every process it starts
    later) through a filter process; set ``MAGNUM_LOG=quiet`` unless set.
    A no-op where ``HABITAT_VER_SHOW_NOISE=1`` or already filtered.

    Returns:
        True when a filter was started.
    """
    global _FILTER
    if os.environ.get(SHOW_ENV_VAR, "") not in ("", "0") or filtering():
        return False
    try:
        original = os.dup(2)
    except OSError:  # no stderr at all
        return False
    os.environ.setdefault("MAGNUM_LOG", "quiet")
    _keep_terminal_size(original)
    read_end, write_end = os.pipe()
    ack_read, ack_write = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", FILTER_SCRIPT, str(ack_write)],
            stdin=read_end,
            stdout=original,
            stderr=original,
            pass_fds=(ack_write,),
            cwd="/",  # never keeps a run's folder busy
            start_new_session=True,  # a terminal's Ctrl-C is for the run
        )
    except OSError:
        for fd in (read_end, write_end, ack_read, ack_write, original):
            os.close(fd)
        return False
    for fd in (read_end, ack_write):
        os.close(fd)
    sys.stderr.flush()
    os.dup2(write_end, 2)
    os.close(write_end)
    os.environ[FILTERED_ENV_VAR] = _descriptor_id(2)
    _FILTER = _Filter(process, os.getpid(), original, ack_read)
    atexit.register(_restore_at_exit)
    return True


class _Filter(NamedTuple):
    process: subprocess.Popen
    installed_by: int  # the pid that installed it (a forked child's atexit skips)
    original_stderr: int
    ack: int


_FILTER: Optional[_Filter] = None


def _keep_terminal_size(fd: int) -> None:
    """Progress bars size themselves from their descriptor's terminal, which
    a pipe is not; tqdm then reads COLUMNS and LINES."""
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        return
    os.environ.setdefault("COLUMNS", str(size.columns))
    os.environ.setdefault("LINES", str(size.lines))


def _restore_at_exit() -> None:
    """At exit: wait until the filter has printed everything this process
    wrote (:data:`SYNC`), then point stderr at the console again."""
    global _FILTER
    if _FILTER is None or os.getpid() != _FILTER.installed_by:
        return
    try:
        sys.stderr.flush()
        os.write(2, SYNC + b"\n")
        ready, _, _ = select.select([_FILTER.ack], [], [], EXIT_WAIT_SECONDS)
        if ready:
            os.read(_FILTER.ack, 64)
    except (OSError, ValueError):
        pass  # the filter is gone: nothing to wait for
    os.dup2(_FILTER.original_stderr, 2)
    os.environ.pop(FILTERED_ENV_VAR, None)
    _FILTER = None
