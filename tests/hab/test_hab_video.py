"""An evaluation video on the real simulator: the video camera, metrics beside it.

One short episode of ``hab/tidy_house_oracle`` (cut at :data:`STEPS` steps)
with ``habitat_baselines.eval.video_option=[disk]``, on the generated data
(fixture ``hab_run_dir``), through ``tests/hab/run_video_eval.py``, which also
keeps the raw video-camera images the frames were built from.
"""

import json
import subprocess
import sys

import imageio
import numpy as np
import pytest

from habitat_ver.common.video_frame import PANEL_COLOUR, PANEL_WIDTH
from habitat_ver.tools.hab_stage_report import read_evaluations
from habitat_ver.trainers.eval_header import counted_line
from tests.sim.conftest import REPO, real_sim_env

pytestmark = pytest.mark.sim

STEPS = 12
CAMERA = 512  # the configs' third_rgb_sensor width and height


def test_the_video_shows_the_third_person_camera_with_the_metrics_beside_it(hab_run_dir):
    out = hab_run_dir / "outputs" / "video"
    run = subprocess.run(
        [sys.executable, str(REPO / "tests" / "hab" / "run_video_eval.py"), str(out)]
        + ["hab/tidy_house_oracle", "--", "habitat_baselines.test_episode_count=1"]
        + [f"habitat.environment.max_episode_steps={STEPS}"],
        cwd=str(hab_run_dir),
        env=real_sim_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout.split("RESULT ", 1)[1].splitlines()[0])
    # The env gave the camera to the evaluator (the policy's own spaces leave
    # it out: tests/policies/test_video_camera_hidden.py).
    assert "third_rgb" in result["env_keys"] and "head_depth" in result["env_keys"]
    (video,) = (out / "video").iterdir()  # one mp4, no temporary folder left
    # One episode planned, averaged and said so in the log the report reads.
    (evaluation,) = read_evaluations(str(out / "run.log"))
    assert evaluation.episodes == 1 and counted_line(1) in (out / "run.log").read_text()
    assert video.suffix == ".mp4" and video.name.startswith("episode=")
    with imageio.get_reader(str(video)) as reader:
        frames = np.stack([np.asarray(f)[:, :, :3] for f in reader])
    cameras = np.load(out / "cameras.npy")

    # Upstream's convention: the first observation, one frame per step (the
    # last one black, with the final metrics); the frame built from the next
    # episode's first observation is not in the video.
    assert len(frames) == STEPS + 1 == len(cameras) - 1
    assert frames.shape[1:] == (CAMERA, CAMERA + PANEL_WIDTH, 3)
    assert cameras.shape[1:] == (CAMERA, CAMERA, 3)

    # The camera part of every frame is the raw camera image (up to the
    # codec's error); upstream's text over it differed by ~255 on its strokes.
    for index, (frame, camera) in enumerate(zip(frames[:-1], cameras[:-2])):
        error = np.abs(frame[:, :CAMERA].astype(int) - camera.astype(int))
        assert error.mean() < 4 and np.percentile(error, 99.9) < 80, index
        # The room and the robot: an image, not a flat colour.
        assert camera.std() > 10, index
    # The last frame: a black camera image, the final metrics beside it only.
    last = frames[-1].astype(int)
    assert last[:, :CAMERA].mean() < 4
    assert (last[:, CAMERA:].max(axis=2) > 150).sum() > 500
    # The first frame's panel holds no metrics yet (upstream passes none).
    first_panel = frames[0][:, CAMERA + 8 :].astype(int)
    assert np.abs(first_panel - np.array(PANEL_COLOUR)).mean() < 4
