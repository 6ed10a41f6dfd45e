"""Trainer-level faults: errors after the env workers started, hung envs,
a trainer killed while an env is stuck.  Each run is a fresh interpreter
started from a marker folder, so every process it leaves is found."""

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from habitat_ver.common.checkpoint import ResumeStateFiles
from habitat_ver.system.stop_signals import sigint_as_in_a_terminal


RUN_TIMEOUT_S = 240


def start_script(script, *args):
    """Starts ``script`` in its own session; output goes to files beside it,
    so a process the run leaves behind cannot keep a reader waiting."""
    out_path, err_path = script.parent / "stdout.txt", script.parent / "stderr.txt"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        return subprocess.Popen(
            [sys.executable, str(script), *map(str, args)],
            cwd=script.parent,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=sigint_as_in_a_terminal,  # the ctrl-c cases signal it as a terminal would
        )


def finish(proc, script, timeout=RUN_TIMEOUT_S):
    """``(exit code, stdout, stderr)``; a run that outlives ``timeout`` is
    killed with its whole process group and fails the test."""
    err_path = script.parent / "stderr.txt"
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(
            f"{script.name} still running after {timeout} s:\n{err_path.read_text()[-3000:]}"
        )
    return proc.returncode, (script.parent / "stdout.txt").read_text(), err_path.read_text()


def run_script(script, *args, timeout=RUN_TIMEOUT_S):
    return finish(start_script(script, *args), script, timeout)


@pytest.mark.multiproc
@pytest.mark.parametrize("trainer", ["ver", "appo", "ddppo"])
@pytest.mark.parametrize("kind", ["config", "other"])
def test_error_after_workers_started_shuts_them_down(
    trainer, kind, tmp_path, processes_left, marked_scripts, shm_left_since
):
    script = marked_scripts("setup_error_run.py")
    shm_before = set(os.listdir("/dev/shm"))
    code, out, err = run_script(script, trainer, kind, tmp_path / "out")
    # One per env (ver, ddppo); appo: two rollout workers of 2 envs each.
    workers = {"ver": 4, "appo": 2, "ddppo": 4}[trainer]
    assert f"env workers running: {workers}" in out, err[-3000:]
    if kind == "config":  # the CLI's one-line error
        assert code == 2, err[-3000:]
        assert "Traceback" not in err
        assert "habitat_ver.run: error: habitat_baselines.rl.ppo.lr=-1.0 is not allowed" in err
    else:
        assert code == 1, err[-3000:]
        assert "ValueError: Invalid learning rate: injected" in err
    assert processes_left(str(script.parent)) == []
    assert shm_left_since(shm_before) == set()


@pytest.mark.multiproc
@pytest.mark.parametrize("pool", ["ver", "appo"])
def test_hung_env_is_named_once_while_the_others_step(
    pool, processes_left, marked_scripts, shm_left_since
):
    script = marked_scripts("hung_env_run.py", "faulty_envs.py")
    shm_before = set(os.listdir("/dev/shm"))
    code, out, err = run_script(script, pool, "warn")
    assert code == 0, err[-3000:]
    warnings = [line for line in err.splitlines() if "inside one step or reset" in line]
    assert len(warnings) == 1, err[-3000:]
    assert "environment 1 (HangsOnThirdStep)" in warnings[0]
    assert "hang_warning_seconds=1" in warnings[0]
    # Env 0 went on stepping: far more results than env 1's two steps.
    assert int(out.split("results: ")[1]) > 10
    assert processes_left(str(script.parent)) == []
    assert shm_left_since(shm_before) == set()


@pytest.mark.multiproc
@pytest.mark.parametrize("pool", ["ver", "appo"])
def test_trainer_killed_while_an_env_hangs_leaves_no_process(
    pool, processes_left, pids_left, marked_scripts
):
    script = marked_scripts("hung_env_run.py", "faulty_envs.py")
    code, out, err = run_script(script, pool, "sigkill")
    assert code == -signal.SIGKILL and "pids:" in out, err[-3000:]
    # Two workers, the forkserver and the resource tracker.
    pids = [int(p) for p in out.split("pids:")[1].split()]
    assert len(pids) == 4
    leftovers = pids_left(pids)
    for pid in leftovers:  # this run's; killed so that a failure leaves nothing
        os.kill(pid, signal.SIGKILL)
    assert leftovers == []
    assert processes_left(str(script.parent)) == []


HANG_WARNING = "environment 1 (global index 1, HangsOnThirdStep-v0) has been inside one step"


def _wait_for_text(proc, script, path, text):
    """Blocks until ``path`` holds ``text``; fails the test (and kills the
    run's group) if the run ends or times out first."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not (path.exists() and text in path.read_text()):
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            err = (script.parent / "stderr.txt").read_text()
            pytest.fail(f"no {text!r} in {path.name}:\n{err[-3000:]}")
        time.sleep(0.2)


def _wait_for_warning(proc, script):
    """Blocks until the run warned that env 1 hangs (it is stuck for good)."""
    _wait_for_text(proc, script, script.parent / "stderr.txt", HANG_WARNING)


@pytest.mark.multiproc
@pytest.mark.parametrize("trainer", ["ver", "appo", "ddppo"])
def test_sigterm_to_the_process_group_stops_the_run_and_its_workers_quietly(
    trainer, tmp_path, processes_left, marked_scripts
):
    # SLURM, torchrun and `timeout` signal the whole group, the forkserver
    # included. A forkserver that died of it made Python report the workers
    # as exited (code 255): they got no CLOSE, and each printed two
    # tracebacks (EOFError, BrokenPipeError) once the trainer closed its pipes.
    script = marked_scripts("train_run.py", "faulty_envs.py")
    out = tmp_path / "out"
    proc = start_script(script, trainer, out)
    _wait_for_text(proc, script, out / "train.log", "update: 2")
    os.killpg(proc.pid, signal.SIGTERM)
    code, stdout, err = finish(proc, script, timeout=120)
    assert code == 0, err[-3000:]
    assert "stopped before its budget" in stdout
    assert "Traceback" not in err and "Error" not in err, err[-3000:]
    # Every env was closed by its worker (not left to die with the trainer);
    # appo's 2 rollout workers (gym/appo_cartpole) hold 2 envs each.
    closed = (script.parent / "closed.txt").read_text().split()
    assert len(closed) == 4 and len(set(closed)) == (2 if trainer == "appo" else 4)
    assert processes_left(str(script.parent)) == []


@pytest.mark.multiproc
def test_a_rank_whose_torchrun_agent_was_killed_stops_and_saves(
    tmp_path, processes_left, pids_left, marked_scripts
):
    # Killed with SIGKILL, the agent took no rank with it: they trained on
    # unwatched, and the same command started again wrote beside them.
    script = marked_scripts("launcher_run.py", "train_run.py", "faulty_envs.py")
    out = tmp_path / "out"
    proc = start_script(script, "ver", out)
    _wait_for_text(proc, script, out / "train.log", "update: 2")
    rank = int((script.parent / "stdout.txt").read_text().split()[0])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    try:
        assert pids_left([rank]) == [], "the rank trains on without its agent"
    finally:
        with contextlib.suppress(ProcessLookupError):  # the group is gone once the rank is
            os.killpg(proc.pid, signal.SIGKILL)
    stdout = (script.parent / "rank_stdout.txt").read_text()
    assert "stopped before its budget" in stdout
    assert "the torchrun agent" in (script.parent / "rank_stderr.txt").read_text()
    saved = ResumeStateFiles(str(out / "ck")).load()
    assert saved["requeue_stats"]["num_updates_done"] >= 2
    assert processes_left(str(script.parent)) == []


@pytest.mark.multiproc
@pytest.mark.parametrize("trainer", ["ver", "appo", "ddppo"])
def test_scenarios_with_different_spaces_are_one_error_at_start(
    trainer, tmp_path, processes_left, marked_scripts
):
    # It used to fail after the workers started, deep in upstream's batch_obs:
    # "could not broadcast input array from shape (72,96,3) into shape (4,)".
    script = marked_scripts("train_run.py", "faulty_envs.py")
    code, _, err = run_script(
        script, trainer, tmp_path / "out", "CartPole-v1,habitat_ver/DoomMyWayHome-v0"
    )
    assert code == 1, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    (line,) = [ln for ln in err.splitlines() if ln.startswith("habitat_ver.run: ")]
    assert "environment 1 (global index 1, habitat_ver/DoomMyWayHome-v0) has observation" in line
    assert "Box(0, 255, (72, 96, 3), uint8)" in line and "CartPole-v1" in line
    assert "embedded_env.scenarios may only mix envs that do" in line
    assert processes_left(str(script.parent)) == []


@pytest.mark.multiproc
def test_ddppo_env_that_raises_is_reported_once(
    tmp_path, processes_left, marked_scripts, shm_left_since
):
    script = marked_scripts("ddppo_faulty_run.py", "faulty_envs.py")
    shm_before = set(os.listdir("/dev/shm"))
    code, _, err = run_script(script, "raises", tmp_path / "out")
    assert code == 1, err[-3000:]
    assert (
        "habitat_ver.run: environment 1 (global index 1, RaisesOnThirdStep-v0) failed; "
        "all env workers were shut down."
    ) in err
    assert err.count("ValueError: boom at step 3") == 1  # the worker's traceback, once
    assert err.count("Traceback") == 1
    assert "EOFError" not in err
    assert processes_left(str(script.parent)) == []
    assert shm_left_since(shm_before) == set()


@pytest.mark.multiproc
@pytest.mark.parametrize("stop", ["sigterm", "ctrl-c", "sigkill"])
def test_ddppo_hung_env_is_named_and_the_run_stops(stop, tmp_path, processes_left, marked_scripts):
    script = marked_scripts("ddppo_faulty_run.py", "faulty_envs.py")
    proc = start_script(script, "hangs", tmp_path / "out")
    _wait_for_warning(proc, script)
    if stop == "sigterm":
        os.kill(proc.pid, signal.SIGTERM)
    elif stop == "ctrl-c":  # a terminal signals the whole foreground group
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGKILL)
    code, _, err = finish(proc, script, timeout=60)
    assert err.count("has been inside one step") == 1  # warned once
    if stop == "sigterm":
        assert code == 1, err[-3000:]
        assert "a stop was requested after it hung" in err
        assert "habitat_ver.run: environment 1 (global index 1, HangsOnThirdStep-v0)" in err
    elif stop == "ctrl-c":
        assert code == 130, err[-3000:]
        assert "habitat_ver.run: interrupted" in err
    else:
        assert code == -signal.SIGKILL
    assert processes_left(str(script.parent)) == []


@pytest.mark.multiproc
def test_ddppo_metric_that_only_some_envs_report_is_counted_per_env(tmp_path, marked_scripts):
    # Envs 0 and 2 end every 3 steps, 1 and 3 every 5, all by the time limit:
    # at step 3 two of the four infos carry TimeLimit.truncated. Upstream's
    # statistics stacked it to 2 values for 4 envs (RuntimeError: size of
    # tensor a (4) must match ... b (2)); with one env it would broadcast.
    script = marked_scripts("ddppo_metrics_run.py", "faulty_envs.py")
    code, out, err = run_script(script, tmp_path / "out")
    assert code == 0, err[-3000:]
    count = [float(v) for v in out.split("count: [")[1].split("]")[0].split(",")]
    truncated = [float(v) for v in out.split("truncated: [")[1].split("]")[0].split(",")]
    # 2 updates x T=15 = 30 lock-steps: 30 / 3 = 10 episodes, 30 / 5 = 6.
    assert count == [10.0, 6.0, 10.0, 6.0]
    # Every episode was cut, each counted once, on its own env.
    assert truncated == count
