"""A file the disk refuses mid-run: one line from habitat_ver.run, nothing lost."""

import errno

import pytest

from habitat_ver import run
from habitat_ver.common import atomic
from habitat_ver.common.checkpoint import ResumeStateFiles

from .conftest import run_overrides


def test_a_full_disk_at_a_checkpoint_is_one_line_and_the_run_resumes(
    out_dir, tmp_path, monkeypatch, capsys
):
    write = atomic._write_atomically

    def disk_full_for_checkpoints(path, write_bytes):
        if "/ckpt." in path:
            raise OSError(errno.ENOSPC, "No space left on device")
        write(path, write_bytes)

    monkeypatch.setattr(atomic, "_write_atomically", disk_full_for_checkpoints)
    monkeypatch.chdir(tmp_path)  # Hydra's outputs/ folder
    args = ["--config-name=gym/ddppo_cartpole", *run_overrides(out_dir, 2)]
    with pytest.raises(SystemExit) as exited:
        run.main(args)
    assert exited.value.code == run.ENV_FAILURE_EXIT_CODE
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("habitat_ver.run:")]
    assert line == (
        f"habitat_ver.run: could not write {out_dir}/checkpoints/ckpt.0.pth: "
        "No space left on device; the file there, if any, is unchanged"
    )
    # The resume state written before the first checkpoint is intact, and
    # the same command, once the disk has room, finishes the run from it.
    assert ResumeStateFiles(str(out_dir / "checkpoints")).load() is not None
    monkeypatch.setattr(atomic, "_write_atomically", write)
    run.main(args)
    state = ResumeStateFiles(str(out_dir / "checkpoints")).load()
    assert state["requeue_stats"]["num_updates_done"] == 2
