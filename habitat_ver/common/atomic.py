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
import tempfile
from typing import BinaryIO, Callable


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
