"""A thread in each env worker process that watches the trainer and the env.

Env workers ignore SIGTERM and SIGINT (the trainer decides how to stop) and,
started by the forkserver, do not die with the trainer.  Between commands a
worker notices a dead trainer itself, but a worker stuck inside ``env.step()``
reads no command: this thread ends the process once the trainer is gone
(SIGKILL, an abort in a collective), and reports, once, a step or reset that
runs longer than ``hang_warning_s`` (the trainer warns, naming the env).

The thread needs the GIL to run: an env blocked in C code that holds it
(rare; waits on I/O, sleeps and most simulators release it) delays the watch.
"""

import contextlib
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Tuple

from habitat_ver.config.schema import section_or_default

# Default of habitat_baselines.env_workers.hang_warning_seconds.
DEFAULT_HANG_WARNING_S = 60.0


@dataclass
class EnvWorkersConfig:
    """``habitat_baselines.env_workers`` (a settings section, registered in
    :mod:`habitat_ver.registration`): how the trainers watch their env workers."""

    # Seconds one env step or reset may take before a warning names the env (> 0).
    hang_warning_seconds: float = DEFAULT_HANG_WARNING_S


def hang_warning_seconds(config: Any) -> float:
    """``habitat_baselines.env_workers.hang_warning_seconds`` (or its default)."""
    return float(section_or_default(config, "env_workers", EnvWorkersConfig).hang_warning_seconds)


# Seconds between two checks that the trainer is still alive.
PARENT_CHECK_SECONDS = 2.0


def trainer_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead but not yet reaped, is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # "pid (comm) state ...": the state follows the last ")".
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): existence only
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class TrainerWatch:
    """Exits this process when the trainer dies; reports hung env calls.

    Args:
        trainer_pid: the trainer's process id.
        hang_warning_s: seconds one step or reset may take before
            ``on_hang(env_index, seconds)`` is called (once per such call);
            infinite: the trainer is watched, hangs are not.
        on_hang: how the hang is reported (a put on the report queue).
    """

    def __init__(
        self,
        trainer_pid: int,
        hang_warning_s: float = math.inf,
        on_hang: Callable[[int, float], None] = lambda i, seconds: None,
    ):
        self._trainer_pid = trainer_pid
        self._hang_warning_s = hang_warning_s
        self._on_hang = on_hang
        # (env index, monotonic start) of the call in progress; replaced as a
        # whole, so the thread reads a consistent pair without a lock.
        self._busy: Optional[Tuple[int, float]] = None
        self._reported: Optional[Tuple[int, float]] = None

    def start(self) -> "TrainerWatch":
        threading.Thread(target=self._run, name="habitat_ver-trainer-watch", daemon=True).start()
        return self

    @contextlib.contextmanager
    def busy(self, env_index: int) -> Iterator[None]:
        """Marks a step or reset of ``env_index`` as in progress."""
        self._busy = (env_index, time.monotonic())
        try:
            yield
        finally:
            self._busy = None

    def check_hang(self) -> None:
        """Report the call in progress if it is overdue and not yet reported."""
        busy = self._busy
        if busy is None or busy is self._reported:
            return
        seconds = time.monotonic() - busy[1]
        if seconds >= self._hang_warning_s:
            self._reported = busy
            self._on_hang(busy[0], seconds)

    def _run(self) -> None:
        interval = min(PARENT_CHECK_SECONDS, self._hang_warning_s / 2)
        while True:
            time.sleep(interval)
            if not trainer_alive(self._trainer_pid):
                os._exit(1)  # nothing to report to; the env may be stuck
            self.check_hang()
