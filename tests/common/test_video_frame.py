"""Video frames: the camera image untouched, the metrics in a panel beside it."""

import numpy as np
import pytest
import torch

from habitat_ver.common import video_frame as vf

INFO = {
    "num_steps": torch.tensor(12),
    "pddl_success": 0.0,
    "pddl_stage_goals": {"stage_0_5_success": 1.0, "stage_1_success": False},
    "cur_skill": "nav_to_obj",
    "per_object": [1.0, 2.0],  # not a scalar: left out
}


def _camera(height=256, width=256, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def test_the_frame_is_the_camera_unchanged_and_a_panel_on_its_right():
    camera = _camera()
    frame = vf.video_frame(camera, INFO)
    assert frame.shape == (256, 256 + vf.PANEL_WIDTH, 3) and frame.dtype == np.uint8
    # Every camera pixel exactly as given, metrics or not.
    assert np.array_equal(frame[:, :256], camera)
    assert np.array_equal(vf.video_frame(camera, {})[:, :256], camera)


def test_text_is_drawn_in_the_panel_only():
    camera = _camera()
    blank = vf.video_frame(camera, {})[:, 256:]
    written = vf.video_frame(camera, INFO)[:, 256:]
    # Without metrics the panel is its background colour, pixel for pixel.
    assert np.all(blank == np.array(vf.PANEL_COLOUR, dtype=np.uint8))
    # With them, bright text pixels appear there, in 5 lines of LINE_HEIGHT
    # below the top margin (per_object is left out), and nowhere below.
    bright = written.max(axis=2) > 128
    assert bright.sum() > 200
    rows = np.flatnonzero(bright.any(axis=1))
    assert rows.min() >= vf.MARGIN and rows.max() < vf.MARGIN + 5 * vf.LINE_HEIGHT
    bands = {(row - vf.MARGIN) // vf.LINE_HEIGHT for row in rows}
    assert bands == {0, 1, 2, 3, 4}
    assert np.array_equal(bright.any(axis=1)[rows.max() + 1 :], np.zeros(256 - rows.max() - 1))


def test_metric_lines_flatten_dicts_and_write_two_decimals_success_first():
    assert vf.metric_lines(INFO) == [
        "pddl_success: 0.00",
        "pddl_stage_goals.stage_0_5_success: 1.00",
        "pddl_stage_goals.stage_1_success: 0.00",
        "num_steps: 12.00",
        "cur_skill: nav_to_obj",
    ]


def test_too_many_lines_end_with_a_count_and_long_keys_are_cut_from_the_start():
    lines = [f"metric_{i}: 1.00" for i in range(100)]
    # (256 - 8) // 15 = 16 lines fit: 15 metrics and "... 85 more".
    shown = vf.panel_lines(lines, height=256, width=320)
    assert len(shown) == 16 and shown[-1] == "... 85 more" and shown[0] == "metric_0: 1.00"
    long = "composite_stage_goals." * 5 + "stage_1_success: 1.00"
    (cut,) = vf.panel_lines([long], height=256, width=200)
    assert cut.startswith(vf.ELLIPSIS) and cut.endswith("stage_1_success: 1.00")
    assert vf._text_width(cut) <= 200 - 2 * vf.MARGIN


def test_depth_in_zero_one_is_shown_grey_as_upstream_does():
    depth = np.full((4, 6, 1), 0.5, dtype=np.float32)
    frame = vf.video_frame(torch.from_numpy(depth), {}, panel_width=2)
    # 0.5 * 255 = 127.5, truncated to 127 (upstream's astype(uint8)); 3 channels.
    assert frame.shape == (4, 8, 3) and np.all(frame[:, :6] == 127)
    rgba = np.zeros((4, 4, 4), dtype=np.uint8)
    rgba[..., 3] = 255
    assert np.all(vf.camera_rgb(rgba) == 0)


def test_bad_input_is_one_error_naming_it():
    with pytest.raises(ValueError, match=r"shape \[H, W, C\] with C = 1, 3 or 4; got \(8, 8\)"):
        vf.video_frame(np.zeros((8, 8), dtype=np.uint8), {})
    with pytest.raises(ValueError, match="panel_width .* >= 1; got 0"):
        vf.video_frame(_camera(), {}, panel_width=0)
    with pytest.raises(ValueError, match=r"needs an image observation; .*'joint': \(7,\)"):
        vf.observation_camera({"joint": np.zeros(7)}, ["third_rgb"])


def test_the_video_camera_is_shown_else_the_observation_images():
    third = _camera(8, 8, seed=1)
    depth = np.ones((4, 4, 1), dtype=np.float32)
    observation = {"head_depth": depth, "third_rgb": third, "joint": np.zeros(7)}
    assert vf.observation_camera(observation, ["third_rgb"]) is third
    # No video camera: the images side by side, the shorter padded with black below.
    tiled = vf.observation_camera(observation, ["other_camera"])
    assert tiled.shape == (8, 4 + 8, 3)
    assert np.all(tiled[:4, :4] == 255) and np.all(tiled[4:, :4] == 0)
    assert np.array_equal(tiled[:, 4:], third)
