"""Evaluating a folder: its ckpt.<n>.pth in order of n, each once, to the run's last."""

import json

import pytest
import torch

from habitat_ver.common.checkpoint import load_checkpoint_file
from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp
from habitat_ver.trainers import eval_folder
from habitat_ver.trainers.eval_folder import PROGRESS_NAME, evaluate_folder

from .conftest import run_overrides, tensorboard_scalars


def _write(folder, name, percent_done=None):
    extra = {} if percent_done is None else {"percent_done": percent_done}
    torch.save({"extra_state": extra}, folder / name)


def _evaluator():
    """An evaluate callback recording the indices, returning the file's extra_state."""
    seen = []

    def evaluate(path, index):
        seen.append(index)
        return torch.load(path)["extra_state"]

    return seen, evaluate


def _no_sleep(monkeypatch, on_sleep=lambda: None):
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        if len(slept) > 5:
            raise AssertionError("still waiting after 5 polls")
        on_sleep()

    monkeypatch.setattr(eval_folder.time, "sleep", sleep)
    return slept


def test_checkpoints_in_index_order_without_other_files(tmp_path, monkeypatch):
    # Written newest index first, so modification time would give 10, 2, 0.
    for name, percent in (("ckpt.10.pth", 1.0), ("ckpt.2.pth", 0.6), ("ckpt.0.pth", 0.3)):
        _write(tmp_path, name, percent)
    for other in ("latest.pth", "resume-state.pth", "ckpt.x.pth", "notes.pth"):
        _write(tmp_path, other)
    slept = _no_sleep(monkeypatch)
    seen, evaluate = _evaluator()
    assert evaluate_folder(str(tmp_path), evaluate, num_checkpoints=100) == [0, 2, 10]
    assert seen == [0, 2, 10] and slept == []
    saved = json.loads((tmp_path / PROGRESS_NAME).read_text())
    assert saved == {"evaluated": [0, 2, 10], "run_ended": True}


def test_waits_for_the_next_checkpoint_of_a_run_that_goes_on(tmp_path, monkeypatch):
    _write(tmp_path, "ckpt.0.pth", 0.5)
    slept = _no_sleep(monkeypatch, lambda: _write(tmp_path, "ckpt.1.pth", 1.0))
    seen, evaluate = _evaluator()
    assert evaluate_folder(str(tmp_path), evaluate, 100, poll_seconds=0.25) == [0, 1]
    assert slept == [0.25]


def test_an_empty_folder_is_waited_on_saying_it_holds_no_checkpoint(tmp_path, monkeypatch):
    logged = []
    monkeypatch.setattr(eval_folder.logger, "info", logged.append)
    _no_sleep(monkeypatch, lambda: _write(tmp_path, "ckpt.0.pth", 1.0))
    assert evaluate_folder(str(tmp_path), _evaluator()[1], 100) == [0]
    # It said "(its run goes on)" of a folder no run had written to.
    assert logged == [
        f"waiting for {tmp_path}/ckpt.0.pth (the folder holds no checkpoint yet: a run "
        "writing there has not saved one; stop with Ctrl-C if none is training)"
    ]


def test_a_rerun_goes_on_after_the_checkpoints_done_and_stops_once_the_run_ended(
    tmp_path, monkeypatch
):
    for n, percent in enumerate((0.3, 0.6, 1.0)):
        _write(tmp_path, f"ckpt.{n}.pth", percent)
    (tmp_path / PROGRESS_NAME).write_text(json.dumps({"evaluated": [0], "run_ended": False}))
    slept = _no_sleep(monkeypatch)
    seen, evaluate = _evaluator()
    assert evaluate_folder(str(tmp_path), evaluate, 100) == [1, 2]
    assert evaluate_folder(str(tmp_path), evaluate, 100) == []  # nothing left, no wait
    assert seen == [1, 2] and slept == []


def test_a_folder_without_write_access_is_evaluated_without_progress(tmp_path, monkeypatch):
    for n, percent in enumerate((0.5, 1.0)):
        _write(tmp_path, f"ckpt.{n}.pth", percent)
    writes = []

    def refuse(path, write):
        writes.append(path)
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(eval_folder, "write_atomically", refuse)
    _no_sleep(monkeypatch)
    seen, evaluate = _evaluator()
    assert evaluate_folder(str(tmp_path), evaluate, 100) == [0, 1]
    assert len(writes) == 1  # tried once, then kept in memory
    assert not (tmp_path / PROGRESS_NAME).exists()


def test_checkpoints_without_percent_done_stop_at_num_checkpoints(tmp_path, monkeypatch):
    for n in range(4):
        _write(tmp_path, f"ckpt.{n}.pth")
    _no_sleep(monkeypatch)
    seen, evaluate = _evaluator()
    assert evaluate_folder(str(tmp_path), evaluate, num_checkpoints=3) == [0, 1, 2]


@pytest.mark.parametrize("trainer", ["ddppo", "appo"])
def test_evaluating_a_run_folder_runs_each_checkpoint_once(trainer, out_dir):
    # A checkpoint every update: ckpt.0-2, besides latest.pth and the resume
    # state (which upstream's evaluator took for a checkpoint).
    every_update = [
        "habitat_baselines.num_checkpoints=-1",
        "habitat_baselines.checkpoint_interval=1",
    ]
    config_name = f"gym/{trainer}_cartpole"
    execute_exp(get_config(config_name, run_overrides(out_dir, 3, 4) + every_update), "train")
    folder = out_dir / "checkpoints"
    assert {p.name for p in folder.iterdir()} >= {"latest.pth", "resume-state.pth"}
    eval_config = get_config(
        config_name,
        run_overrides(out_dir, num_envs=4)
        + every_update
        + [
            f"habitat_baselines.eval_ckpt_path_dir={folder}",
            "habitat_baselines.test_episode_count=2",
            "habitat_baselines.evaluate=True",
        ],
    )
    execute_exp(eval_config, "eval")
    rewards = tensorboard_scalars(out_dir / "tb")["eval_reward/average_reward"]
    assert len(rewards) == 3 and all(8 <= r <= 500 for r in rewards)
    saved = json.loads((folder / PROGRESS_NAME).read_text())
    assert saved == {"evaluated": [0, 1, 2], "run_ended": True}


def test_a_corrupt_checkpoint_is_skipped_and_the_later_ones_evaluated(tmp_path, monkeypatch):
    # It ended the evaluation, and every rerun ended at the same file.
    _write(tmp_path, "ckpt.0.pth", 0.3)
    (tmp_path / "ckpt.1.pth").write_bytes(b"not a checkpoint")
    _write(tmp_path, "ckpt.2.pth", 1.0)
    _no_sleep(monkeypatch)

    def evaluate(path, index):
        return load_checkpoint_file(path)["extra_state"]

    assert evaluate_folder(str(tmp_path), evaluate, 100) == [0, 2]
    saved = json.loads((tmp_path / PROGRESS_NAME).read_text())
    assert saved == {"evaluated": [0, 1, 2], "run_ended": True}


def test_an_unreadable_progress_file_is_ignored_with_a_warning(tmp_path, monkeypatch):
    _write(tmp_path, "ckpt.0.pth", 1.0)
    (tmp_path / PROGRESS_NAME).write_text("{not json")
    warned = []
    monkeypatch.setattr(eval_folder.logger, "warning", warned.append)
    assert evaluate_folder(str(tmp_path), _evaluator()[1], 100) == [0]
    assert len(warned) == 1 and PROGRESS_NAME in warned[0]


def test_checkpoints_after_the_end_of_a_run_whose_budget_was_raised_are_evaluated(
    tmp_path, monkeypatch
):
    # ckpt.1 ended the first run (percent_done 1.0 of its budget); resumed
    # with a doubled budget, the run wrote ckpt.2 (0.75) and ckpt.3 (1.0).
    for n, percent in enumerate((0.5, 1.0, 0.75, 1.0)):
        _write(tmp_path, f"ckpt.{n}.pth", percent)
    _no_sleep(monkeypatch)
    seen, evaluate = _evaluator()
    assert evaluate_folder(str(tmp_path), evaluate, 100) == [0, 1, 2, 3]


def test_a_finished_evaluation_goes_on_once_the_run_went_on(tmp_path, monkeypatch):
    for n, percent in enumerate((0.5, 1.0)):
        _write(tmp_path, f"ckpt.{n}.pth", percent)
    _no_sleep(monkeypatch)
    seen, evaluate = _evaluator()
    assert evaluate_folder(str(tmp_path), evaluate, 100) == [0, 1]
    _write(tmp_path, "ckpt.2.pth", 1.0)  # the run resumed with a raised budget
    assert evaluate_folder(str(tmp_path), evaluate, 100) == [2]
    assert evaluate_folder(str(tmp_path), evaluate, 100) == []
