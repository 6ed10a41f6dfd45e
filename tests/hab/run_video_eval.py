"""One evaluation with a video, keeping the raw video-camera images it showed.

Used by ``tests/hab/test_hab_video.py``: runs ``habitat_ver.run.execute_exp``
as ``python -m habitat_baselines.run`` would (in the current folder, whose
``data/`` is make_hab_dataset's), with :func:`video_evaluator.frame_of`
wrapped so that each camera image is also kept, then saves them to
``OUT/cameras.npy`` (one per frame upstream's evaluator built, in order) and
prints one JSON line::

    python tests/hab/run_video_eval.py OUT CONFIG -- OVERRIDES...
"""

import json
import os
import sys

import habitat_ver  # noqa: F401  (registration before habitat)
import numpy as np

from habitat_ver.common.video_frame import camera_rgb, observation_camera
from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp
from habitat_ver.trainers import video_evaluator


def main(argv: list) -> int:
    out, name, separator, *overrides = argv
    assert separator == "--", argv
    cameras = []
    frame_of = video_evaluator.frame_of

    def kept(observation, info, camera_keys):
        # A copy: the observation may be a view of a buffer the next step rewrites.
        cameras.append(camera_rgb(observation_camera(observation, camera_keys)).copy())
        return frame_of(observation, info, camera_keys)

    video_evaluator.frame_of = kept
    config = get_config(
        name,
        [
            "hab_data=generated",
            f"habitat_baselines.log_file={out}/run.log",
            f"habitat_baselines.video_dir={out}/video",
            f"habitat_baselines.tensorboard_dir={out}/tb",
            "habitat_baselines.eval.video_option=[disk]",
            *overrides,
        ],
    )
    trainer = execute_exp(config, "eval")
    np.save(os.path.join(out, "cameras.npy"), np.stack(cameras))
    observed = sorted(trainer._env_spec.observation_space.spaces)
    print("RESULT " + json.dumps({"frames_built": len(cameras), "env_keys": observed}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
