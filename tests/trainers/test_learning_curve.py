"""The end-of-run learning curve: a PNG of exactly the logged reward and steps/s."""

import os

import pytest
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp
from habitat_ver.trainers.learning_curve import (
    CurveRecorder,
    REWARD_TAG,
    SPS_TAG,
    read_curve_points,
    write_curve_png,
)

from .conftest import run_overrides

NUM_UPDATES, NUM_STEPS, NUM_ENVS = 4, 16, 2


def _logged(out_dir, tag):
    events = EventAccumulator(str(out_dir / "tb"))
    events.Reload()
    return [[float(e.step), e.value] for e in events.Scalars(tag)]


def test_cartpole_run_writes_curve_of_the_logged_values(out_dir, capsys):
    config = get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=NUM_UPDATES))
    trainer = execute_exp(config, "train")
    path = out_dir / "learning_curve.png"
    assert trainer.last_summary.learning_curve == str(path)
    assert f"learning curve: {path}" in capsys.readouterr().out
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] > 100
    plotted = read_curve_points(str(path))
    # One logged point per update, at the step count after it: T x N steps each.
    steps = [float(NUM_STEPS * NUM_ENVS * (u + 1)) for u in range(NUM_UPDATES)]
    for tag in (REWARD_TAG, SPS_TAG):
        logged = _logged(out_dir, tag)
        assert [p[0] for p in logged] == steps, tag
        if tag == REWARD_TAG:
            # Until an episode has ended upstream logs a placeholder 0 (every
            # CartPole return is >= 8), which the curve leaves off.
            logged = [p for p in logged if p[1] != 0.0]
            assert len(logged) >= 2  # some episode ends within 48 steps per env
        assert [p[0] for p in plotted[tag]] == [p[0] for p in logged], tag
        # TensorBoard stores float32: equal to float32 precision.
        for (_, ours), (_, theirs) in zip(plotted[tag], logged):
            assert ours == pytest.approx(theirs, rel=1e-6), tag
    assert all(v > 0 for _, v in plotted[SPS_TAG])
    assert not [n for n in os.listdir(out_dir) if n.startswith(".curve-")]


def test_nothing_logged_writes_no_file(tmp_path):
    assert write_curve_png({}, str(tmp_path / "c.png"), "empty") is None
    assert not (tmp_path / "c.png").exists()


def test_failed_write_leaves_old_curve_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "c.png"
    points = {REWARD_TAG: [[10.0, 1.5]], SPS_TAG: [[10.0, 99.0]]}
    write_curve_png(points, str(path), "first")
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("matplotlib.figure.Figure.savefig", boom)
    with pytest.raises(OSError, match="disk full"):
        write_curve_png({REWARD_TAG: [[20.0, 3.0]]}, str(path), "second")
    assert path.read_bytes() == before
    assert read_curve_points(str(path)) == points
    assert sorted(os.listdir(tmp_path)) == ["c.png"]


class _Writer:
    def __init__(self):
        self.calls = []

    def add_scalar(self, tag, value, step=None):
        self.calls.append((tag, value, step))

    def flush(self):
        return "flushed"


def test_recorder_forwards_everything_and_skips_placeholder_rewards():
    writer, points, episodes = _Writer(), {}, [False]
    recorder = CurveRecorder(writer, points, lambda: episodes[0])
    recorder.add_scalar(REWARD_TAG, 0.0, 32)  # no episode finished: placeholder
    recorder.add_scalar(SPS_TAG, 50.0, 32)
    episodes[0] = True
    recorder.add_scalar(REWARD_TAG, 2.5, 64)
    recorder.add_scalar("losses/value", 1.0, 64)
    assert points == {SPS_TAG: [[32.0, 50.0]], REWARD_TAG: [[64.0, 2.5]]}
    assert len(writer.calls) == 4  # every call still reaches TensorBoard
    assert recorder.flush() == "flushed"
