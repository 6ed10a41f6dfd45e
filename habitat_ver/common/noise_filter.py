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
report but not the plugin manager.  So a run's descriptor 2, which its env
workers inherit, is a pipe read by a small process running this file (the
standard library only): :mod:`habitat_ver.common.filtered_console` starts it.

The filter drops the lines of :data:`NOISE` and cuts its C++ pieces out of
lines other processes wrote into, prints one line the first time it drops a
kind that has a ``summary`` (habitat-sim's errors), and passes everything else
on as it arrives: whole lines at once, a line still open when it holds a
carriage return (a progress bar) at once, any other unfinished line after
:data:`IDLE_FLUSH_SECONDS`.  A line that arrives while a progress bar holds the
console's last line open starts on a new line.  The filter holds only the
pipe's read end: whatever a process wrote before it died (a crash message
included) is still read and printed, and it exits once the last writer has
closed (the run and all its workers).  It ignores stop signals and runs at
idle CPU priority (:func:`_never_preempt_writers`); after each :data:`SYNC`
line it answers on the descriptor given as its argument.
"""

import os
import re
import select
import signal
import sys
from typing import BinaryIO, List, NamedTuple, Optional, Pattern, Set, Tuple

# Named in the summary line; read by habitat_ver.common.filtered_console.
SHOW_ENV_VAR = "HABITAT_VER_SHOW_NOISE"
# An unfinished line without a carriage return (a prompt, a write split in
# two) is passed on after this long without more input.
IDLE_FLUSH_SECONDS = 0.5
# At exit the run writes this line and waits for the filter to say it printed
# everything before it (not EOF: the forkserver and other children may keep
# the pipe open after the run's last line).
SYNC = b"\x00habitat_ver noise filter: sync"


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
