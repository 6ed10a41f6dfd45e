"""A second run on a checkpoint folder a live run owns is refused before any env starts."""

import os
import signal
import subprocess
import sys
import time

import pytest

from habitat_ver.common.checkpoint import ResumeStateFiles
from habitat_ver.common.run_lock import LOCK_NAME, FolderInUseError, FolderLock
from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp, get_trainer_class
from habitat_ver.trainers.run_guards import checkpoint_folder_owned

from .conftest import run_overrides, tensorboard_scalars

CONFIG = "gym/ddppo_cartpole"


def _trainer(out_dir, *extra):
    config = get_config(CONFIG, run_overrides(out_dir, num_updates=2) + list(extra))
    return get_trainer_class(config.habitat_baselines.trainer_name)(config)


def test_training_a_held_folder_is_refused_before_any_env(out_dir, monkeypatch):
    trainer = _trainer(out_dir)
    started = []
    monkeypatch.setattr(type(trainer), "_init_train", lambda self, *a: started.append(1))
    folder = out_dir / "checkpoints"
    with FolderLock(str(folder)):
        with pytest.raises(FolderInUseError, match=f"pid {os.getpid()}, since "):
            trainer.train()
    assert started == []
    assert [p.name for p in folder.iterdir()] == [LOCK_NAME]
    assert not (out_dir / "train.log").exists()


def test_evaluation_reads_a_folder_its_run_holds(out_dir):
    execute_exp(get_config(CONFIG, run_overrides(out_dir, num_updates=2)), "train")
    folder = out_dir / "checkpoints"
    eval_config = get_config(
        CONFIG,
        run_overrides(out_dir)
        + [
            f"habitat_baselines.eval_ckpt_path_dir={folder}/latest.pth",
            "habitat_baselines.test_episode_count=2",
            "habitat_baselines.evaluate=True",
        ],
    )
    with FolderLock(str(folder)):  # the run goes on training
        execute_exp(eval_config, "eval")
    assert len(tensorboard_scalars(out_dir / "tb")["eval_reward/average_reward"]) == 1


@pytest.mark.parametrize("rank, refused", [("0", True), ("1", False)])
def test_only_rank_0_of_a_run_takes_the_folder(tmp_path, monkeypatch, rank, refused):
    # torchrun's variables; the process group does not exist yet at this point.
    for name, value in (("LOCAL_RANK", rank), ("RANK", rank), ("WORLD_SIZE", "2")):
        monkeypatch.setenv(name, value)
    config = get_config(CONFIG, run_overrides(tmp_path))
    with FolderLock(config.habitat_baselines.checkpoint_folder):
        if refused:
            with pytest.raises(FolderInUseError):
                with checkpoint_folder_owned(config):
                    pass
        else:
            with checkpoint_folder_owned(config):
                pass


HOLDER = """
import sys, time
from habitat_ver.common.run_lock import FolderLock
FolderLock(sys.argv[1]).acquire()
print("locked", flush=True)
time.sleep(600)
"""


@pytest.mark.multiproc
def test_the_command_line_refuses_in_one_line_with_exit_2(out_dir):
    folder = out_dir / "checkpoints"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        done = subprocess.run(
            [sys.executable, "-m", "habitat_ver.run", f"--config-name={CONFIG}"]
            + run_overrides(out_dir),
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        holder.kill()
        holder.wait(timeout=60)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    # gym prints its deprecation banner on stderr first.
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("habitat_ver.run:")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        f"habitat_ver.run: error: habitat_baselines.checkpoint_folder='{folder}' is in use "
        "by a live run (host "
    )
    assert f"pid {holder.pid}, since " in lines[0]
    assert [p.name for p in folder.iterdir()] == [LOCK_NAME]


@pytest.mark.multiproc
def test_a_run_killed_with_sigkill_leaves_its_folder_to_the_restart(out_dir):
    # Its env workers come from the forkserver and hold no copy of the lock.
    command = [sys.executable, "-m", "habitat_ver.run", f"--config-name={CONFIG}"]
    command += run_overrides(out_dir, num_updates=200)
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    resume_state = out_dir / "checkpoints" / "resume-state.pth"
    try:
        deadline = time.monotonic() + 300
        while not resume_state.exists() and first.poll() is None:
            assert time.monotonic() < deadline, "no resume state after 300 s"
            time.sleep(0.1)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    assert first.returncode == -signal.SIGKILL
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    stats = ResumeStateFiles(str(out_dir / "checkpoints")).load()["requeue_stats"]
    assert stats["num_updates_done"] == 200
