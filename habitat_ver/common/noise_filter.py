"""Known third-party console noise, kept off the console of a run.

A ``rearrange/ver_pick`` run on the real simulator with 16 envs printed ~1,400
lines before its first update, nearly all of them from libraries, repeated in
every env worker: habitat-sim's errors about ReplicaCAD objects whose meshes
the public copy lacks (23 per env), Magnum's ``duplicate static plugin``
notices, gym 0.23's deprecation banner, habitat-sim's "no semantic
annotations" warning, gym's float32 warning and habitat-lab's ``Initializing
dataset/sim/task`` lines (one each per env), and Magnum's GL context report on
stdout (24 lines per env).

habitat-sim and Magnum write from C++ straight to file descriptor 2, so
filtering ``sys.stderr`` would miss them, and their log-level switches cannot
help with all of it: ``HABITAT_SIM_LOG`` has no level above ``error`` (0.3.3's
``esp/core/Logging.h``), and ``MAGNUM_LOG=quiet`` silences the GL context
report but not the plugin manager.  So :func:`filter_command_line_noise`
(called by ``import habitat_ver``, only where the interpreter runs one of
our command lines or ``habitat_baselines.run``):

* sets ``MAGNUM_LOG=quiet`` unless it is set (the GL report, on stdout);
* points descriptor 2 of this process at a pipe read by a small filter
  process (this file, run with the standard library only).  Processes started
  later (the forkserver, env workers) inherit the descriptor, so their output
  is filtered too, once, by the same filter.

The filter drops the lines of :data:`NOISE`, prints one line the first time it
drops a kind that has a ``summary`` (habitat-sim's errors), and passes
everything else on as it arrives: whole lines at once, a line still open when
it holds a carriage return (a progress bar) at once, any other unfinished line
after :data:`IDLE_FLUSH_SECONDS`.  A line that arrives while a progress bar
holds the console's last line open starts on a new line.  The filter holds
only the pipe's read end: whatever a process wrote before it died (a crash
message included) is still read and printed, and the filter exits once the
last writer has closed (the run and all its workers).  It ignores stop
signals; the run waits for it at exit.

``HABITAT_VER_SHOW_NOISE=1`` turns all of this off.  Under
``python -m habitat_baselines.run`` the lines printed while habitat-baselines
imports habitat-lab (gym's banner, Magnum's plugin notices: 9 lines) come
before our Hydra plugin is loaded and stay; ``habitat_ver.run`` and our tools
have none.
"""

import atexit
import os
import re
import select
import signal
import subprocess
import sys
from typing import BinaryIO, List, NamedTuple, Optional, Pattern, Set, Tuple

SHOW_ENV_VAR = "HABITAT_VER_SHOW_NOISE"
# Set to the identity of the filtered descriptor ("<device>:<inode>"): a
# process whose stderr is that pipe is filtered already.
FILTERED_ENV_VAR = "HABITAT_VER_NOISE_FILTERED"
# Command lines whose console is filtered: ``python -m <module>``.
COMMAND_MODULES = ("habitat_ver.run", "habitat_baselines.run")
COMMAND_PACKAGES = ("habitat_ver.tools.",)
CONSOLE_SCRIPTS = ("habitat-ver-run",)
# An unfinished line without a carriage return (a prompt, a write split in
# two) is passed on after this long without more input.
IDLE_FLUSH_SECONDS = 0.5
# At exit the run writes this line and waits, at most EXIT_WAIT_SECONDS, for
# the filter to say it printed everything before it (not EOF: the forkserver
# and other children may keep the pipe open after the run's last line).
SYNC = b"\x00habitat_ver noise filter: sync"
EXIT_WAIT_SECONDS = 5.0


class Noise(NamedTuple):
    """One kind of known noise.

    Attributes:
        name: what it is, for tests and the summary.
        pattern: what it looks like.
        summary: printed once, the first time this kind is dropped; None
            drops it silently.
        piece: the pattern is a piece of a line, cut out wherever it is.
            Corrade writes a C++ log line in several ``write`` calls (prefix,
            message, newline), and another process's writes can land between
            them: the pieces are removed, and what is left of the line (another
            process's line, or nothing) is judged on its own.  Otherwise the
            pattern is searched for in the whole line, which is dropped.
    """

    name: str
    pattern: Pattern[str]
    summary: Optional[str] = None
    piece: bool = False


# habitat-sim's prefix ("[time]:[level]:[subsystem] file(line)::function : ")
# at the two call sites whose messages are noise here.
_SIM_PREFIX = (
    r"\[[0-9:]+\]:\[(?:Error|Warning)\]:\[(?:Metadata|Sim)\] (?:ObjectAttributesManager"
    r"\.cpp\(\d+\)::preRegisterObjectFinalize|Simulator\.cpp\(\d+\)::"
    r"instanceStageForSceneAttributes) : "
)
# The missing-mesh message, written as text, path, text, path, text: any run
# of its pieces, a path being a file name with an extension (no spaces).
_PATH = r"(?:[^`\s]*\.\w+)?"
_HEAD = r"Render asset template handle : `"
_MID = r"` specified in object template with handle : `"
_TAIL = (
    r"` does not correspond to any existing file or primitive render asset, so "
    r"registration is aborted\."
)
NOISE = (
    Noise("habitat-sim: prefix of the two below", re.compile(_SIM_PREFIX), piece=True),
    Noise(
        "habitat-sim: object config without its mesh",
        re.compile(
            rf"(?:{_HEAD})?{_PATH}(?:{_MID}{_PATH})?{_TAIL}"
            rf"|{_HEAD}{_PATH}(?:{_MID}{_PATH})?|{_PATH}{_MID}{_PATH}"
        ),
        "habitat_ver: hiding habitat-sim's '... registration is aborted' errors: object "
        "configs of the scene dataset whose mesh files are not on disk (ReplicaCAD's public "
        "copy lacks some) are left out; a task that adds one fails then. "
        f"{SHOW_ENV_VAR}=1 shows them",
        piece=True,
    ),
    Noise(
        "habitat-sim: no semantic annotations",
        re.compile(
            r"The active scene does not contain semantic annotations : "
            r"activeSemanticSceneID_ = ?\d*"
        ),
        piece=True,
    ),
    Noise(
        "Magnum: duplicate static plugin",
        re.compile(
            r"PluginManager::Manager: duplicate static plugin(?: ?\w+Importer(?:, ignoring)?)?"
            r"|(?<!\w) ?\w+Importer, ignoring|^, ignoring$"
        ),
        piece=True,
    ),
    Noise(
        "gym 0.23: deprecation banner",
        re.compile(
            r"^(Gym has been unmaintained since 2022 and does not support NumPy 2\.0"
            r"|Please upgrade to Gymnasium, the maintained drop-in replacement of Gym"
            r"|See the migration guide at https://gymnasium\.farama\.org/)"
        ),
    ),
    Noise(
        "gym: Box bound precision lowered",
        re.compile(
            r"gym/spaces/box\.py:\d+: UserWarning: .*WARN: Box bound precision lowered by "
            r"casting to float32"
            r'|^\s+logger\.warn\(f"Box bound precision lowered by casting to \{self\.dtype\}"\)$'
        ),
    ),
    Noise(
        "habitat-lab: Initializing dataset/sim/task",
        re.compile(
            r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "
            r"(?:Initializing dataset|initializing sim|Initializing task) \S+$"
        ),
    ),
)


def strip_noise(line: str) -> Tuple[str, List[Noise]]:
    """``line`` (without its newline) less its noise, and the kinds found.

    Returns:
        What is left to print (``""`` when the line was all noise, ``line``
        itself when it held none) and the kinds of noise it held.
    """
    found = []
    for noise in NOISE:
        if noise.piece:
            line, cut = noise.pattern.subn("", line)
            if cut:
                found.append(noise)
    if found and not line.strip():
        return "", found
    whole = next((n for n in NOISE if not n.piece and n.pattern.search(line)), None)
    if whole is not None:
        return "", found + [whole]
    return line, found


def classify(line: str) -> Optional[Noise]:
    """The most specific kind of noise ``line`` holds (a message over its
    prefix), or None."""
    found = strip_noise(line)[1]
    return found[-1] if found else None


class LineFilter:
    """The filter's state: bytes from the pipe in, bytes for the console out."""

    def __init__(self) -> None:
        self.pending = b""  # the start of a line not passed on yet
        self.bar_open = False  # the console's last line is an open progress bar
        self.summarised: Set[str] = set()
        self.dropped = 0
        self.syncs = 0  # SYNC lines seen

    def feed(self, data: bytes) -> bytes:
        """What to print for ``data``, read from the pipe."""
        out: List[bytes] = []
        *lines, self.pending = (self.pending + data).split(b"\n")
        for line in lines:
            self._line(line, out)
        if b"\r" in self.pending:  # a progress bar's redraw: show it now
            self._open(self.pending, out)
            self.pending = b""
        return b"".join(out)

    def flush(self) -> bytes:
        """The unfinished line, passed on (idle, or end of input)."""
        out: List[bytes] = []
        if self.pending:
            self._open(self.pending, out)
            self.pending = b""
        return b"".join(out)

    def _line(self, line: bytes, out: List[bytes]) -> None:
        if line.endswith(SYNC):  # after an unfinished line, if any: keep it open
            self.syncs += 1
            if line != SYNC:
                self._open(line[: -len(SYNC)], out)
            return
        kept, found = strip_noise(line.rsplit(b"\r", 1)[-1].decode(errors="replace"))
        if found:
            self.dropped += 1
            for noise in found:
                if noise.summary is not None and noise.name not in self.summarised:
                    self.summarised.add(noise.name)
                    self._print(noise.summary.encode(), out)
            if not kept:
                return
            line = kept.encode()
        self._print(line, out)

    def _print(self, line: bytes, out: List[bytes]) -> None:
        # An empty line or a redraw ends the bar's own line; anything else
        # starts on a line of its own.
        self._break_bar(line, out)
        out.append(line + b"\n")
        self.bar_open = False

    def _open(self, text: bytes, out: List[bytes]) -> None:
        self._break_bar(text, out)
        out.append(text)
        # A redraw holds the line for the bar (tqdm blanks it before a
        # tqdm.write: no bar then); the rest of any other unfinished line is
        # its writer's, still to come.
        self.bar_open = b"\r" in text and bool(text.rsplit(b"\r", 1)[-1].strip())

    def _break_bar(self, text: bytes, out: List[bytes]) -> None:
        if self.bar_open and text and not text.startswith(b"\r"):
            out.append(b"\n")


def run_filter(source: int, sink: BinaryIO, ack: Optional[int] = None) -> None:
    """Filter ``source`` (a descriptor) into ``sink`` until every writer has
    closed; after each :data:`SYNC` line, everything before it is printed and
    a byte is written to the descriptor ``ack``."""
    state = LineFilter()
    writable = True
    answered = 0
    while True:
        ready, _, _ = select.select([source], [], [], IDLE_FLUSH_SECONDS if state.pending else None)
        data = os.read(source, 65536) if ready else b""
        out = state.feed(data) if data else state.flush()
        if state.syncs > answered:
            out += state.flush()
        if out and writable:
            try:
                sink.write(out)
                sink.flush()
            except OSError:  # the console is gone: keep draining the pipe
                writable = False
        if state.syncs > answered and ack is not None:
            try:
                os.write(ack, b"\n" * (state.syncs - answered))
            except OSError:  # the run is gone already
                pass
        answered = state.syncs
        if ready and not data:
            return  # end of input: every writer has closed


# ------------------------------------------------------------- the run's side
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
            [sys.executable, "-I", "-S", os.path.abspath(__file__), str(ack_write)],
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


def _never_preempt_writers() -> None:
    """Run only when a CPU is free of the run's processes.

    Corrade writes one habitat-sim line in several ``write`` calls.  A reader
    woken by the first one preempted its writer, another env worker wrote in
    between, and the pieces of 16 workers' lines interleaved on the console
    (none did when stderr was a file, which wakes no one).  An idle-class
    process never preempts; it still runs when the writers block or pause.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux, or refused: the lowest priority
        os.nice(19)


def _main() -> None:
    # The run's stop signals are the run's: this process ends when its input does.
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGQUIT"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    _never_preempt_writers()
    ack = int(sys.argv[1]) if len(sys.argv) > 1 else None
    run_filter(sys.stdin.fileno(), sys.stdout.buffer, ack)


if __name__ == "__main__":
    _main()
