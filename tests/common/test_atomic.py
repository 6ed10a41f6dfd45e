"""write_atomically: the file's mode, what a killed writer left behind, OS errors."""

import errno
import os
import pickle
import stat

import pytest

from habitat_ver.common.atomic import FILE_MODE, FileWriteError, write_atomically


def test_files_get_opens_mode_not_mkstemps():
    # mkstemp's 0600 kept every other account (an evaluation job) out.
    old = os.umask(0o022)
    os.umask(old)
    assert FILE_MODE == 0o666 & ~old


def test_written_file_has_the_mode_and_the_bytes(tmp_path):
    path = tmp_path / "ckpt.0.pth"
    write_atomically(str(path), lambda out: out.write(b"weights"))
    assert path.read_bytes() == b"weights"
    assert stat.S_IMODE(path.stat().st_mode) == FILE_MODE


def test_a_killed_writers_temporary_file_goes_with_the_next_write(tmp_path):
    killed = tmp_path / ".ckpt.1.pth.abc123.tmp"  # a kill -9 during its write
    other = tmp_path / ".ckpt.10.pth.def456.tmp"  # another destination's
    killed.write_bytes(b"half")
    other.write_bytes(b"half")
    write_atomically(str(tmp_path / "ckpt.1.pth"), lambda out: out.write(b"whole"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, "ckpt.1.pth"]


def _full_disk(out):
    out.write(b"hal")
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_is_one_error_naming_the_file_and_the_old_file_stays(tmp_path):
    path = tmp_path / "resume-state.pth"
    path.write_bytes(b"old state")
    with pytest.raises(FileWriteError) as raised:
        write_atomically(str(path), _full_disk)
    assert raised.value.errno == errno.ENOSPC and isinstance(raised.value, OSError)
    assert str(raised.value) == (
        f"could not write {path}: No space left on device; the file there, if any, is unchanged"
    )
    assert str(pickle.loads(pickle.dumps(raised.value))) == str(raised.value)
    assert [p.name for p in tmp_path.iterdir()] == ["resume-state.pth"]
    assert path.read_bytes() == b"old state"


def test_a_folder_that_is_a_file_is_named(tmp_path):
    (tmp_path / "checkpoints").write_bytes(b"")
    path = tmp_path / "checkpoints" / "ckpt.0.pth"
    with pytest.raises(FileWriteError, match=f"could not write {path}: "):
        write_atomically(str(path), lambda out: out.write(b"weights"))
