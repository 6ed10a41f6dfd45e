"""The per_env pool (VER's): a failing env is reported once and nothing is left behind."""

import os
import subprocess
import sys

import pytest


def _run_faulty(script, mode: str, timeout: float) -> subprocess.CompletedProcess:
    """faulty_env_run.py in ``mode``, in its own folder."""
    return subprocess.run(
        [sys.executable, str(script), mode],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=script.parent,
    )


@pytest.mark.multiproc
@pytest.mark.parametrize("mode", ["processes", "serial"])
def test_failing_env_is_named_and_every_worker_is_gone(
    mode, processes_left, marked_scripts, shm_left_since
):
    script = marked_scripts("faulty_env_run.py", "faulty_envs.py")
    marker_dir = script.parent
    shm_before = set(os.listdir("/dev/shm"))
    done = _run_faulty(script, mode, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    error = done.stdout
    assert "ERROR: environment 1 (RaisesOnThirdStep) failed" in error
    assert "all env workers were shut down" in error
    assert "ValueError: boom at step 3" in error  # the worker's traceback
    assert processes_left(str(marker_dir)) == []
    assert shm_left_since(shm_before) == set()


@pytest.mark.multiproc
def test_an_env_that_never_finishes_building_is_named_and_every_worker_is_gone(
    processes_left, marked_scripts
):
    # Before: a bare queue.Empty after the wait, and the workers left running.
    script = marked_scripts("faulty_env_run.py", "faulty_envs.py")
    done = _run_faulty(script, "hangs_while_built", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ERROR: environment 1 (HangsWhileBuilt) failed" in done.stdout
    assert "nothing was heard from environments [1] for 2 s while they were being built" in (
        done.stdout
    )
    assert processes_left(str(script.parent)) == []


@pytest.mark.multiproc
def test_workers_exit_when_the_trainer_is_killed(processes_left, marked_scripts):
    # Workers ignore SIGTERM/SIGINT (the trainer stops them) and are not the
    # trainer's children (forkserver), so they must notice it is gone.
    script = marked_scripts("faulty_env_run.py", "faulty_envs.py")
    done = _run_faulty(script, "sigkill", timeout=180)
    assert done.returncode == -9 and "workers started" in done.stdout, done.stderr[-3000:]
    assert processes_left(str(script.parent)) == []
