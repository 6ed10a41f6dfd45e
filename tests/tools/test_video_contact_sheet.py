"""video_contact_sheet: which frames, the tiling, the PNG, the errors."""

import numpy as np
import pytest
from habitat.utils.visualizations.utils import images_to_video
from PIL import Image

from habitat_ver.tools import video_contact_sheet as sheet


def test_frames_are_spaced_evenly_up_to_the_one_before_the_last():
    # 11 frames, the last left out: linspace(0, 9, 6) = 0, 1.8, 3.6, 5.4, 7.2, 9.
    assert sheet.picked_frames(11, 6) == [0, 2, 4, 5, 7, 9]
    # A short video gives what it has.
    assert sheet.picked_frames(3, 6) == [0, 1]
    with pytest.raises(ValueError, match="--frames .* >= 1; got 0"):
        sheet.picked_frames(11, 0)
    with pytest.raises(ValueError, match="has 1 frame"):
        sheet.picked_frames(1, 6)


def test_the_sheet_tiles_labelled_frames_and_scales_to_the_width():
    frames = [np.full((10, 20, 3), 50 * i, dtype=np.uint8) for i in range(3)]
    out = sheet.contact_sheet(frames, [0, 4, 8], columns=2, width=40)
    # 2 rows of (label 22 + 10) px, 2 columns of 20 px; the fourth tile blank.
    assert out.shape == (64, 40, 3)
    assert np.all(out[22:32, 20:40] == 50) and np.all(out[54:64, 20:40] == 0)
    assert out[:22].max() > 200  # the label text (anti-aliased)
    half = sheet.contact_sheet(frames, [0, 4, 8], columns=3, width=30)
    assert half.shape == (16, 30, 3)
    with pytest.raises(ValueError, match="frames of one shape"):
        sheet.contact_sheet([frames[0], np.zeros((5, 5, 3), np.uint8)], [0, 1], 2, 40)


def test_the_tool_writes_a_small_png_from_an_mp4(tmp_path, capsys):
    frames = [np.full((64, 96, 3), 20 * i, dtype=np.uint8) for i in range(8)]
    images_to_video(frames, str(tmp_path), "clip", fps=10, verbose=False)
    out = tmp_path / "sheet.png"
    code = sheet.main([str(tmp_path / "clip.mp4"), "--out", str(out), "--width", "200"])
    assert code == 0
    assert "frames [0, 1, 2, 4, 5, 6] of" in capsys.readouterr().out
    assert Image.open(out).size[0] == 200
    assert sheet.main([str(tmp_path / "none.mp4"), "--out", str(out)]) == 2
    assert "is not a file" in capsys.readouterr().err
