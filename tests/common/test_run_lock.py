"""One live run per folder: the lock names its owner and dies with it."""

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from habitat_ver.common.run_lock import (
    LOCK_NAME,
    FolderInUseError,
    FolderLock,
    LogFileLock,
    LogInUseError,
)

KEY = "habitat_baselines.checkpoint_folder"

# Holds the lock of argv[1] until killed; says so on stdout once it holds it.
HOLDER = """
import sys, time
from habitat_ver.common.run_lock import FolderLock
lock = FolderLock(sys.argv[1])
lock.acquire()
print("locked", flush=True)
time.sleep(600)
"""


def test_a_second_lock_is_refused_naming_folder_and_owner(tmp_path):
    folder = tmp_path / "checkpoints"
    with FolderLock(str(folder)):
        owner = json.loads((folder / LOCK_NAME).read_text())
        assert (owner["host"], owner["pid"]) == (socket.gethostname(), os.getpid())
        with pytest.raises(FolderInUseError) as caught:
            FolderLock(str(folder)).acquire()
        message = str(caught.value)
        assert message.startswith(
            f"{KEY}='{folder}' is in use by a live run "
            f"(host {socket.gethostname()}, pid {os.getpid()}, since {owner['since']}): "
        )
        assert "\n" not in message and "evaluating the folder meanwhile is allowed" in message
    # Released: the record is emptied and the next run takes the folder.
    assert (folder / LOCK_NAME).read_text() == ""
    with FolderLock(str(folder)):
        pass


def _start_holder(folder):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "locked"
    return holder


@pytest.mark.multiproc
def test_a_live_process_holds_the_folder_and_its_kill_9_frees_it(tmp_path):
    holder = _start_holder(tmp_path)
    try:
        with pytest.raises(FolderInUseError, match=rf"pid {holder.pid}, since "):
            FolderLock(str(tmp_path)).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        assert holder.wait(timeout=60) == -signal.SIGKILL
    # The kernel released the lock; the dead owner's record is still in the file.
    assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == holder.pid
    with FolderLock(str(tmp_path)):
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()


def test_a_file_system_without_locks_runs_unlocked(tmp_path, monkeypatch):
    import errno

    from habitat_ver.common import run_lock

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(run_lock.fcntl, "flock", no_locks)
    with FolderLock(str(tmp_path)):
        FolderLock(str(tmp_path)).acquire()  # nothing to refuse with


def test_one_evaluation_per_log_file_and_it_does_not_lock_the_training_folder(tmp_path):
    log = tmp_path / "run.log"
    with LogFileLock(str(log)), FolderLock(str(tmp_path)):  # training beside it: allowed
        with pytest.raises(LogInUseError) as caught:
            LogFileLock(str(log)).acquire()
        message = str(caught.value)
        assert message.startswith(
            f"habitat_baselines.log_file='{log}' is being written by another evaluation "
            f"(host {socket.gethostname()}, pid {os.getpid()}, since "
        )
        assert "\n" not in message and message.endswith("its own habitat_baselines.log_file")
        assert isinstance(caught.value, FolderInUseError)  # a run error: one line, exit 2
        with LogFileLock(str(tmp_path / "other.log")):  # another log: free
            pass
    with LogFileLock(str(log)):
        pass
