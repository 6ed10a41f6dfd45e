"""One live run per folder: an exclusive lock on a file in it, held for the run's life.

Two runs on one checkpoint folder overwrote each other's checkpoints and resume
states silently.  A run takes :class:`FolderLock` on ``<folder>/.run.lock``
with ``flock``: the kernel releases it when the process ends in any way
(kill -9 included), so a dead owner never leaves the folder locked.  The
owner's host, pid and start time are written into the file, only to name the
owner in the refusal: the lock, not the file, is what counts, and the file
stays behind, empty, after the run.

An evaluation takes :class:`LogFileLock` on its log file the same way: two
evaluations writing one log interleave their results, which no reader can
tell apart again.

On NFS (v4, or v3 with lockd) Linux turns ``flock`` into a byte-range lock
that other clients see, and the server drops it once the owner's node stops
renewing its lease (node lost).  A file system that supports no lock at all
(Lustre mounted without ``flock``) is warned about and the run goes on
unlocked.
"""

import contextlib
import datetime
import errno
import fcntl
import json
import os
import socket
from types import TracebackType
from typing import Any, Dict, Optional, Type

from habitat import logger

LOCK_NAME = ".run.lock"
# errnos of a file system that cannot lock (not a lock held by another run).
_NO_LOCKING = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)


class FolderInUseError(RuntimeError):
    """Another live process holds the folder's run lock."""

    def __init__(self, folder: str, key: str, owner: Dict[str, Any]):
        who = _owner_text(owner)
        super().__init__(
            f"{key}={folder!r} is in use by a live run ({who}): two runs writing one "
            "folder overwrite each other's checkpoints and resume states. Wait for that "
            f"run to end or stop it, or set {key} (and tensorboard_dir, log_file) to new "
            "folders; evaluating the folder meanwhile is allowed"
        )
        self.folder = folder
        self.owner = owner


def _owner_text(owner: Dict[str, Any]) -> str:
    if owner:
        return f"host {owner.get('host')}, pid {owner.get('pid')}, since {owner.get('since')}"
    return "its owner is starting and has not written its host and pid yet"


class LogInUseError(FolderInUseError):
    """Another live evaluation writes the log file."""

    def __init__(self, log_file: str, owner: Dict[str, Any]):
        RuntimeError.__init__(
            self,
            f"habitat_baselines.log_file={log_file!r} is being written by another "
            f"evaluation ({_owner_text(owner)}): two evaluations in one log mix their "
            "results. Wait for it to end, or give this one its own "
            "habitat_baselines.log_file",
        )
        self.folder = os.path.dirname(os.path.abspath(log_file))
        self.owner = owner


def _read_owner(fd: int) -> Dict[str, Any]:
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
        owner = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    return owner if isinstance(owner, dict) else {}


class FolderLock:
    """The run lock of ``folder`` (created when missing), as a context manager.

    Args:
        folder: the folder the run writes.
        key: the config key naming it, for the refusal's message.
    """

    def __init__(
        self,
        folder: str,
        key: str = "habitat_baselines.checkpoint_folder",
        name: str = LOCK_NAME,
    ):
        self.folder = folder
        self.key = key
        self.path = os.path.join(folder, name)
        self._fd: Optional[int] = None

    def _refusal(self, owner: Dict[str, Any]) -> FolderInUseError:
        return FolderInUseError(self.folder, self.key, owner)

    def acquire(self) -> None:
        """Take the lock, or raise :class:`FolderInUseError` naming its owner."""
        os.makedirs(self.folder, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _read_owner(fd)
            os.close(fd)
            raise self._refusal(owner) from None
        except OSError as error:
            os.close(fd)
            if error.errno not in _NO_LOCKING:
                raise
            logger.warning(
                f"{self.key}={self.folder!r}: this file system cannot lock {LOCK_NAME} "
                f"({error.strerror}); nothing stops a second run from writing the folder"
            )
            return
        owner = dict(
            host=socket.gethostname(),
            pid=os.getpid(),
            since=datetime.datetime.now().isoformat(timespec="seconds"),
        )
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(owner).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Empty the owner record and release the lock (no-op when not held)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):  # a folder gone read-only: the record stays
            os.ftruncate(fd, 0)
        os.close(fd)  # releases the flock

    def __enter__(self) -> "FolderLock":
        self.acquire()
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.release()


class LogFileLock(FolderLock):
    """An evaluation's hold on its log file: ``.<name>.lock`` beside it.

    Raises (on entering):
        LogInUseError: another live evaluation holds it, named.
    """

    def __init__(self, log_file: str):
        folder = os.path.dirname(os.path.abspath(log_file))
        super().__init__(
            folder, "habitat_baselines.log_file", f".{os.path.basename(log_file)}.lock"
        )
        self.log_file = log_file

    def _refusal(self, owner: Dict[str, Any]) -> FolderInUseError:
        return LogInUseError(self.log_file, owner)
