"""Preemption-safe stopping across ranks, and SLURM's requeue.

A stop signal (:mod:`habitat_ver.system.stop_signals`) must stop every rank at
the same safe point (between two updates); then rank 0 writes the resume state,
the env workers shut down, and a SLURM batch job requeues itself; restarting
resumes where it stopped.

* Ranks agree through the all-reduce every update already does (the trainer
  adds :data:`STOP_KEY` to it), so a signal that reaches only one rank, or
  reaches the ranks at different moments, stops all of them after the same
  update, without an extra synchronisation point.
* :func:`requeue` asks SLURM to requeue the job (rank 0, batch jobs only).
"""

import subprocess

from habitat import logger
from habitat_baselines.rl.ddppo.ddp_utils import requeue_job

# Key of the stop request in the per-update all-reduce of the losses.
STOP_KEY = "_habitat_ver_stop_requested"


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
