"""Preemption-safe stopping: signals, agreement between ranks, SLURM requeue.

SLURM warns a job before it ends it: ``sbatch --signal=B:USR1@90`` sends
SIGUSR1 ninety seconds ahead, and preemption or the time limit send SIGTERM.
On either, every rank must stop at the same safe point (between two updates),
rank 0 writes the resume state, the env workers shut down, and a SLURM batch
job requeues itself; restarting resumes where it stopped.

* :func:`install_stop_handlers` makes SIGTERM, SIGUSR1 and SIGUSR2 set
  upstream's ``EXIT`` event (SIGTERM and SIGUSR1 also ``REQUEUE``; SIGUSR2
  stops without requeueing, as upstream's ``scancel --signal USR2``).
  Ctrl-C (SIGINT) keeps Python's KeyboardInterrupt.
* Ranks agree through the all-reduce every update already does (the trainer
  adds :data:`STOP_KEY` to it), so a signal that reaches only one rank, or
  reaches the ranks at different moments, stops all of them after the same
  update, without an extra synchronisation point.
* :func:`requeue` asks SLURM to requeue the job (rank 0, batch jobs only).
* :func:`stop_handling` leaves the process as it found it once training ends:
  the former signal handlers back, the stop events cleared, so a second
  trainer in the same process (tests, notebooks) does not inherit either.
"""

import contextlib
import signal
import subprocess
import threading
from typing import Any, Iterator

from habitat import logger
from habitat_baselines.rl.ddppo.ddp_utils import EXIT, REQUEUE, SAVE_STATE, requeue_job

# Key of the stop request in the per-update all-reduce of the losses.
STOP_KEY = "_habitat_ver_stop_requested"

# signal -> also requeue the job (under SLURM)?
STOP_SIGNALS = {signal.SIGTERM: True, signal.SIGUSR1: True, signal.SIGUSR2: False}


def _on_stop_signal(signum: int, frame: Any) -> None:
    if STOP_SIGNALS.get(signum, False):
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


def stop_requested_locally() -> bool:
    return EXIT.is_set()


def requeue() -> None:
    """Requeue a SLURM batch job that was asked to (no-op otherwise).

    Every rank calls this (upstream's ``requeue_job`` has a barrier); a
    failing ``scontrol`` (e.g. the job was cancelled) is logged, not raised:
    the resume state is already written.
    """
    try:
        requeue_job()
    except (subprocess.CalledProcessError, OSError) as error:
        logger.warning(f"could not requeue the SLURM job: {error}")
