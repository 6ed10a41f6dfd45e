"""Atomic file writes: a reader sees the old file or the whole new one.

Every file habitat-ver writes (checkpoints, resume states, learning curves,
generated datasets) goes through :func:`write_atomically`: the bytes go to a
temporary file in the destination's folder, are flushed to disk, and the file
is renamed over the destination; the folder entry is then flushed too, so a
crash right after the rename cannot lose it.  A failed write leaves the old
file untouched and no temporary file behind; the temporary file of a process
killed while writing is removed by the next write of the same destination.
Files get the mode an ``open`` would give them (0666 less the umask), not
``mkstemp``'s 0600, so that other accounts (an evaluation job, a teammate)
can read them where the folder lets them.  An OS error (a full disk, a
read-only folder) is one :class:`FileWriteError` naming the file.
"""

import contextlib
import glob
import os
import shutil
import socket
import tempfile
from typing import BinaryIO, Callable, Iterator


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Read once, at import (os.umask can only be read by setting it).
FILE_MODE = 0o666 & ~_umask()


class FileWriteError(OSError):
    """A file that could not be written (disk full, read-only or unusable
    folder); whatever was at its path is unchanged."""

    # Raised as OSError(errno, strerror, path), so that it pickles.
    def __str__(self) -> str:
        return (
            f"could not write {self.filename}: {self.strerror}; "
            "the file there, if any, is unchanged"
        )


def write_atomically(path: str, write: Callable[[BinaryIO], object]) -> None:
    """Call ``write`` on a binary file object that becomes ``path`` on success.

    Args:
        path: the destination; its folder is created when missing.
        write: writes the whole content into the file object it is given.

    Raises:
        FileWriteError: for any OS error on the way (the cause is chained).
    """
    try:
        _write_atomically(path, write)
    except OSError as error:
        raise FileWriteError(error.errno, error.strerror or str(error), path) from error


def _write_atomically(path: str, write: Callable[[BinaryIO], object]) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    prefix = f".{os.path.basename(path)}."
    for left in glob.glob(os.path.join(glob.escape(folder), glob.escape(prefix) + "*.tmp")):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(left)  # a killed writer's
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), FILE_MODE)
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def folder_written_whole(root: str) -> Iterator[str]:
    """A hidden folder beside ``root`` to write into; when the block ends
    without error it replaces ``root`` whole (a dataset of several files).

    A reader sees the old folder, or none for the instant between two renames,
    never a mix.  On an error, or a kill, ``root`` is unchanged; the hidden
    folders of killed writers on this host are removed by the next call.

    Raises:
        OSError: the folder could not be renamed into place; ``root`` is the
            old folder, or absent.
    """
    parent = os.path.dirname(os.path.abspath(root))
    os.makedirs(parent, exist_ok=True)
    _remove_dead_writers_folders(root)
    partial = _hidden(root, "partial", socket.gethostname(), os.getpid())
    os.makedirs(partial, exist_ok=True)
    try:
        yield partial
        _replace_folder(partial, root)
        dir_fd = os.open(parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the rename survives a crash right after it
        finally:
            os.close(dir_fd)
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(partial)


def _hidden(root: str, kind: str, host: str, pid: int) -> str:
    parent, name = os.path.split(os.path.abspath(root))
    return os.path.join(parent, f".{name}.{kind}-{host}-{pid}")


def _remove_dead_writers_folders(root: str) -> None:
    """The hidden folders of killed runs of this host (a live run's stay)."""
    parent, name = os.path.split(os.path.abspath(root))
    host = socket.gethostname()
    for entry in os.listdir(parent):
        for kind in ("partial", "old"):
            prefix = f".{name}.{kind}-{host}-"
            pid = entry[len(prefix) :]
            if not (entry.startswith(prefix) and pid.isdigit()):
                continue
            try:
                os.kill(int(pid), 0)
                continue  # alive (or another account's)
            except ProcessLookupError:
                shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)
            except PermissionError:
                continue


def _replace_folder(new: str, root: str) -> None:
    """Rename ``new`` to ``root``; an old ``root`` is moved aside first and
    deleted after (between the two renames there is no dataset, never a mixed one)."""
    if not os.path.lexists(root):
        os.rename(new, root)
        return
    old = _hidden(root, "old", socket.gethostname(), os.getpid())
    os.rename(root, old)
    try:
        os.rename(new, root)
    except OSError:
        os.rename(old, root)
        raise
    shutil.rmtree(old, ignore_errors=True)  # a leftover is removed by the next run
