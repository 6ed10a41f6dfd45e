"""Stop signals of this process: stop training at the next safe point.

SLURM warns a job before it ends it: ``sbatch --signal=B:USR1@90`` sends
SIGUSR1 ninety seconds ahead, and preemption or the time limit send SIGTERM.
On either, training stops between two updates, writes its resume state and
shuts its env workers down (the multi-rank agreement and the requeue are
:mod:`habitat_ver.distributed.requeue`'s).

* :func:`install_stop_handlers` makes SIGTERM, SIGUSR1 and SIGUSR2 set
  upstream's ``EXIT`` event (SIGTERM and SIGUSR1 also ``REQUEUE``; SIGUSR2
  stops without requeueing, as upstream's ``scancel --signal USR2``).
  Ctrl-C (SIGINT) keeps Python's KeyboardInterrupt.
* :func:`stop_handling` leaves the process as it found it once training ends:
  the former signal handlers back, the stop events cleared, so a second
  trainer in the same process (tests, notebooks) does not inherit either.
* Env worker processes ignore them (:func:`ignore_stop_signals`): the trainer
  decides when and how they stop.  So does the forkserver that starts them
  (:func:`worker_context`): SLURM, torchrun and ``timeout`` signal the whole
  process group, and a forkserver that died of it made Python report its
  still-running workers as exited (code 255), so they got no CLOSE, were
  left running and printed a traceback each when the trainer's end of their
  pipes closed.
"""

import contextlib
import os
import signal
import threading
from multiprocessing import forkserver
from typing import Any, Iterator

from habitat import logger
from habitat_baselines.rl.ddppo.ddp_utils import EXIT, REQUEUE, SAVE_STATE

from habitat_ver.compat.native_libs import forkserver_context

# signal -> also requeue the job (under SLURM)?
STOP_SIGNALS = {signal.SIGTERM: True, signal.SIGUSR1: True, signal.SIGUSR2: False}


def _on_stop_signal(signum: int, frame: Any) -> None:
    if STOP_SIGNALS.get(signal.Signals(signum), False):
        REQUEUE.set()
    SAVE_STATE.set()
    EXIT.set()


def install_stop_handlers() -> None:
    """SIGTERM / SIGUSR1 / SIGUSR2 -> stop after the current update.

    Only possible from the main thread; elsewhere (e.g. a trainer driven from
    a notebook thread) nothing is installed.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOP_SIGNALS:
        signal.signal(signum, _on_stop_signal)


@contextlib.contextmanager
def stop_handling() -> Iterator[None]:
    """Restores the stop signals' handlers and clears upstream's stop events
    (``EXIT``, ``REQUEUE``, ``SAVE_STATE``) when the block ends.

    Wrap everything that may install handlers (upstream's SLURM handlers,
    :func:`install_stop_handlers`).
    """
    before = {}
    if threading.current_thread() is threading.main_thread():
        before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in before.items():
            # None: a handler installed outside Python, which cannot be put back.
            if handler is not None:
                signal.signal(signum, handler)
        for event in (EXIT, REQUEUE, SAVE_STATE):
            event.clear()


def ignore_stop_signals() -> None:
    """For worker processes: the trainer decides when and how they stop."""
    for signum in (signal.SIGINT, *STOP_SIGNALS):
        signal.signal(signum, signal.SIG_IGN)


def raised_by_ctrl_c(error: BaseException) -> bool:
    """Whether ``error`` is, or was raised while handling, a KeyboardInterrupt.

    Ctrl-C raises KeyboardInterrupt wherever Python is; inside a library's
    cleanup (OmegaConf's ``flag_override`` restoring its flags, say) another
    error can replace it, with the KeyboardInterrupt as its context."""
    seen = set()
    current: Any = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` of a run that its starter stops as Ctrl-C in a terminal
    would (a test, a benchmark's time budget).

    A shell starts a background job (``make test &``, ``nohup ... &``) with
    SIGINT ignored; children inherit that through ``exec`` (``subprocess``
    restores SIGPIPE, not SIGINT), and Python then installs no
    KeyboardInterrupt handler, so the run never sees the SIGINT.  The run
    gets a terminal's foreground disposition back instead."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# Seconds between two looks at whether this rank's torchrun agent is alive.
LAUNCHER_CHECK_SECONDS = 2.0


@contextlib.contextmanager
def stop_when_launcher_dies(check_seconds: float = LAUNCHER_CHECK_SECONDS) -> Iterator[None]:
    """Under torchrun, a stop request once the agent that launched this rank
    is gone, as if it had sent SIGTERM.

    Killed outright (SIGKILL, an OOM kill), the agent takes no rank with it:
    they went on training unwatched, and the same command started again wrote
    beside them into the same folders.  Elsewhere this does nothing.
    """
    if "TORCHELASTIC_RUN_ID" not in os.environ:
        yield
        return
    agent, done = os.getppid(), threading.Event()

    def watch() -> None:
        while not done.wait(check_seconds):
            if os.getppid() != agent:
                logger.warning(
                    f"the torchrun agent (pid {agent}) that launched this rank is gone: "
                    "stopping after this update, with the resume state saved"
                )
                SAVE_STATE.set()
                EXIT.set()
                return

    thread = threading.Thread(target=watch, name="habitat_ver-launcher-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def stop_requested_locally() -> bool:
    """True once a stop signal reached this process."""
    return bool(EXIT.is_set())


def worker_context() -> Any:
    """The forkserver context for worker processes, its server running and
    deaf to the stop signals.

    The server inherits the ignored dispositions through its ``exec`` (set
    here for the moment it starts); it still ends with this process, whose
    pipe it watches.  Where the server already runs (started by a previous
    pool) this is :func:`forkserver_context` alone.
    """
    context = forkserver_context()
    ignored = {}
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            handler = signal.getsignal(signum)
            if handler is not None:  # None: set outside Python, not restorable
                ignored[signum] = signal.signal(signum, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        for signum, handler in ignored.items():
            signal.signal(signum, handler)
    return context
