"""Trainer-level faults: errors after the env workers started, hung envs,
a trainer killed while an env is stuck.  Each run is a fresh interpreter
started from a marker folder, so every process it leaves is found."""

import os
import signal
import subprocess
import sys

import pytest

RUN_TIMEOUT_S = 240


def run_script(script, *args, timeout=RUN_TIMEOUT_S):
    """``(exit code, stdout, stderr)`` of ``script``; a run that outlives
    ``timeout`` is killed with its whole process group and fails the test."""
    proc = subprocess.Popen([sys.executable, str(script), *map(str, args)], cwd=script.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{script.name} {args} still running after {timeout} s:\n{err[-3000:]}")
    return proc.returncode, out, err


@pytest.mark.multiproc
@pytest.mark.parametrize("trainer", ["ver", "appo"])
@pytest.mark.parametrize("kind", ["config", "other"])
def test_error_after_workers_started_shuts_them_down(
    trainer, kind, tmp_path, processes_mentioning, marked_scripts
):
    script = marked_scripts("setup_error_run.py")
    shm_before = set(os.listdir("/dev/shm"))
    code, out, err = run_script(script, trainer, kind, tmp_path / "out")
    workers = {"ver": 4, "appo": 2}[trainer]  # one per env; two rollout workers of 2 envs
    assert f"env workers running: {workers}" in out, err[-3000:]
    if kind == "config":  # the CLI's one-line error
        assert code == 2, err[-3000:]
        assert "Traceback" not in err
        assert "habitat_ver.run: error: habitat_baselines.rl.ppo.lr=-1.0 is not allowed" in err
    else:
        assert code == 1, err[-3000:]
        assert "ValueError: Invalid learning rate: injected" in err
    assert processes_mentioning(str(script.parent)) == []
    assert set(os.listdir("/dev/shm")) - shm_before == set()
