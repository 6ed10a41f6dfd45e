"""A data tool's console: its own progress lines, everything else in a log file.

habitat-lab's episode generator logs every placement it samples, and
habitat-sim, Magnum and habitat-lab's debug visualizer print from C++ and
Python to both descriptors: ``make_hab_dataset`` printed 8,832 lines (7,022 of
them the generator's INFO lines, 161 habitat-sim errors, 74 ``No active dbv
agent to remove.``) around the 15 that said what it made.  Inside
:func:`output_to_log` every write to descriptors 1 and 2 (C++ and Python
alike) goes to a log file, whose path the tool prints first; the tool's own
lines go to the console through the function the block yields.
"""

import contextlib
import os
import sys
from typing import Callable, Iterator

Say = Callable[[str], None]


@contextlib.contextmanager
def output_to_log(path: str, tool: str) -> Iterator[Say]:
    """Within the block, this process's stdout and stderr go to ``path``.

    Args:
        path: the log file (its folder is created; an old log is replaced).
        tool: the tool's name, for the line that names the log.

    Yields:
        ``say(line)``: prints ``line`` on the console.
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    console = os.fdopen(os.dup(1), "w", buffering=1)

    def say(line: str) -> None:
        print(line, file=console, flush=True)

    say(f"{tool}: habitat-lab's and habitat-sim's output goes to {path}")
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(log, 1)
        os.dup2(log, 2)
        yield say
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, log):
            os.close(fd)
        console.close()
