"""A user's HAB mistakes with the real simulator: each ends in one line, or the
command run again completes, and nothing is lost.

The checkpoint mistakes (another skill's, a truncated file, a larger budget on
resume, ``load_resume_state_config=False``) are tests without the simulator
(tests/trainers/); the data made halfway is in tests/hab/test_hab_real.py.
"""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from habitat_ver.common.run_lock import LogFileLock
from habitat_ver.tools.make_hab_dataset import EPISODES_SUBDIR
from habitat_ver.trainers.eval_header import counted_line
from tests.sim.conftest import real_sim_env, run_real

pytestmark = pytest.mark.sim

SCENARIO = "hab/tidy_house_oracle"
HEADER_START = "habitat_ver: evaluating "


def _evaluation(out: Path) -> list:
    """The docs' oracle evaluation of one episode, every file under ``out``."""
    folders = {"tensorboard_dir": "tb", "checkpoint_folder": "checkpoints", "video_dir": "video"}
    return [
        "-m",
        "habitat_baselines.run",
        f"--config-name={SCENARIO}",
        "hab_data=generated",
        "habitat_baselines.test_episode_count=1",
        *(f"habitat_baselines.{key}={out / name}" for key, name in folders.items()),
        f"habitat_baselines.log_file={out / 'eval.log'}",
    ]


def _start(args: list, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=str(cwd),
        env=real_sim_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(what, process: subprocess.Popen, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert process.poll() is None, process.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_an_evaluation_killed_runs_again_and_a_second_one_on_its_log_is_refused(
    hab_run_dir, tmp_path
):
    out = tmp_path / "oracle"
    args = _evaluation(out)
    log = out / "eval.log"

    def evaluating(times: int):
        return lambda: log.is_file() and log.read_text().count(HEADER_START) == times

    # SIGKILL once the evaluation has started its episode.
    killed = _start(args, hab_run_dir)
    try:
        _wait_for(evaluating(1), killed)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=60)
    finally:
        killed.kill()
    assert "Average episode" not in log.read_text()

    # The same command again; while it runs, a second evaluation on its log.
    again = _start(args, hab_run_dir)
    try:
        owner = Path(LogFileLock(str(log)).path)
        # Held once its record names it (the killed one's record stays behind).
        _wait_for(lambda: owner.is_file() and f'"pid": {again.pid},' in owner.read_text(), again)
        # Paused while the second one starts (a quiet machine evaluates an
        # episode faster than a second interpreter starts): it keeps its lock.
        again.send_signal(signal.SIGSTOP)
        try:
            second = run_real(args, cwd=hab_run_dir, timeout=600)
        finally:
            again.send_signal(signal.SIGCONT)
        assert second.returncode == 2, second.stderr[-3000:]
        errors = [line for line in second.stderr.splitlines() if "error:" in line]
        assert len(errors) == 1 and "Traceback" not in second.stderr, second.stderr[-3000:]
        assert f"log_file='{log}' is being written by another evaluation" in errors[0]
        assert f"pid {again.pid}," in errors[0]
        _, err = again.communicate(timeout=1500)
    finally:
        again.kill()
    assert again.returncode == 0, err[-3000:]

    # The log holds the killed start and one complete evaluation, which the
    # stage report reads (a log of two complete ones is refused).
    text = log.read_text()
    assert text.count(HEADER_START) == 2 and text.count(counted_line(1)) == 1
    report = run_real(
        ["-m", "habitat_ver.tools.hab_stage_report", "--out", str(out / "report")]
        + ["--run", f"{SCENARIO}={log}"],
        cwd=hab_run_dir,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    table = (out / "report" / "stage_success.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| tidy_house |"))
    # Oracle skills solve the CI val episode (test_hab_real's oracle test).
    assert row.split("|")[-3].strip() == "100.0", table


def test_a_deleted_episode_file_is_one_line_naming_it_and_its_remedy(hab_run_dir, tmp_path):
    # The generated data with one val episode file deleted (links to the rest).
    data = tmp_path / "data"
    data.mkdir()
    for entry in (hab_run_dir / "data").iterdir():
        if entry.name != "datasets":
            (data / entry.name).symlink_to(entry.resolve())
    episodes = hab_run_dir / "data" / EPISODES_SUBDIR
    for source in episodes.glob("*/*.json.gz"):
        link = data / EPISODES_SUBDIR / source.relative_to(episodes)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(source)
    (data / EPISODES_SUBDIR / "val" / "rearrange_easy.json.gz").unlink()

    done = run_real(
        ["-m", "habitat_baselines.run", "--config-name=rearrange/ver_pick_nonav"]
        + ["hab_data=generated", "habitat_baselines.evaluate=True"],
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert f"there is no data/{EPISODES_SUBDIR}/val/rearrange_easy.json.gz" in errors[0]
    assert "make it again with `python -m habitat_ver.tools.make_hab_dataset" in errors[0]
    # Nothing written outside the run's own folder (Hydra's log and files).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "outputs"]
    run_folder = tmp_path / "outputs" / "rearrange" / "ver_pick_nonav"
    assert {p.parent for p in (tmp_path / "outputs").rglob("*") if p.is_file()} <= {
        run_folder,
        run_folder / ".hydra",
    }
