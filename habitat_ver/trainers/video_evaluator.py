"""Upstream's evaluator with videos a person can watch.

``habitat_baselines.evaluator._target_`` names :class:`VideoEvaluator` in the
``hab/*`` and ``rearrange/*`` configs.  Everything is upstream's
``HabitatEvaluator`` (episodes, statistics, which frames a video holds, its
file name) except the frames themselves and one more log line:

* the image is the video camera's (``habitat_baselines.eval.extra_sim_sensors``:
  upstream adds those sensors only when ``eval.video_option`` asks for a video,
  and the policies leave them out of what they see), else the observation's
  images;
* the metrics are drawn beside it (:func:`~habitat_ver.common.video_frame.video_frame`),
  not over it as upstream's ``overlay_frame`` does;
* the mp4 is written to a temporary name and renamed into place (atomic);
* a line after the averages says how many episodes they are over
  (:func:`~habitat_ver.trainers.eval_header.counted_line`).

Upstream's ``evaluate_agent`` builds each frame by calling
``observations_to_image`` and ``overlay_frame`` and writes the video with
``generate_video``, names it looks up in its own module at each call; there is
no other seam between a step's observation and its frame, so those three names
are replaced for the duration of :meth:`VideoEvaluator.evaluate_agent` and
restored after (``tests/trainers/test_video_evaluator.py`` checks that
upstream's evaluator still calls them).  Frame conventions stay upstream's: the
episode's first observation, one frame per step, and a black camera image with
the final metrics for the last step (its observation is the next episode's).
"""

import contextlib
import os
import shutil
import tempfile
import types
from typing import Any, Iterator, List, Mapping, Optional, Sequence

import numpy as np
import tqdm
from habitat import logger
from habitat_baselines.rl.ppo import habitat_evaluator
from habitat_baselines.rl.ppo.habitat_evaluator import HabitatEvaluator

from habitat_ver.common.video_frame import observation_camera, video_frame
from habitat_ver.policies.agent_config import video_camera_keys
from habitat_ver.trainers.eval_header import counted_line

# The names of upstream's evaluator module replaced while evaluating.
REPLACED = ("observations_to_image", "overlay_frame", "generate_video")


class VideoEvaluator(HabitatEvaluator):
    """``HabitatEvaluator`` whose videos show the video camera with the
    metrics beside it (module docstring)."""

    def evaluate_agent(self, agent: Any, envs: Any, config: Any, *args: Any, **kwargs: Any) -> Any:
        with (
            frames_beside_metrics(video_camera_keys(config)),
            policy_told_of_every_pause(agent),
            episodes_counted() as counted,
        ):
            result = super().evaluate_agent(agent, envs, config, *args, **kwargs)
        logger.info(counted_line(counted[0]))
        return result


@contextlib.contextmanager
def episodes_counted() -> Iterator[List[int]]:
    """Counts the episodes upstream's evaluator averages (into the yielded
    one-item list): it ticks its progress bar once for each, and has no
    other count of them."""
    counted = [0]

    class CountingBar(tqdm.tqdm):
        def update(self, n: Optional[float] = 1) -> Optional[bool]:
            counted[0] += int(n or 0)
            return super().update(n)

    saved = habitat_evaluator.tqdm
    counting: Any = types.SimpleNamespace(tqdm=CountingBar)  # stands for the module
    habitat_evaluator.tqdm = counting
    try:
        yield counted
    finally:
        habitat_evaluator.tqdm = saved


@contextlib.contextmanager
def policy_told_of_every_pause(agent: Any) -> Iterator[None]:
    """The policy hears of every env upstream's evaluator pauses.

    Upstream pauses the envs whose episodes are done, then calls
    ``on_envs_pause`` only ``if any(envs_to_pause)``: a pause of env 0 alone
    (``[0]``) is not passed on, so a policy with a row of state per env
    (``HierarchicalPolicy``: the current skill, the plan step) keeps one row
    too many and fails at its next step (``IndexError: index 1 is out of
    bounds for dimension 0 with size 1`` in ``_broadcast_skill_ids``).  With
    several scenes, each env evaluates its own scene's episodes and finishes
    at its own time, so this happens in every multi-env evaluation.  While
    entered, ``pause_envs`` passes that case on itself (the others upstream
    passes on).
    """
    original = habitat_evaluator.pause_envs

    def pause_envs(envs_to_pause: List[int], *args: Any, **kwargs: Any) -> Any:
        paused = original(envs_to_pause, *args, **kwargs)
        if len(envs_to_pause) > 0 and not any(envs_to_pause):
            agent.actor_critic.on_envs_pause(list(envs_to_pause))
        return paused

    habitat_evaluator.pause_envs = pause_envs
    try:
        yield
    finally:
        habitat_evaluator.pause_envs = original


@contextlib.contextmanager
def frames_beside_metrics(camera_keys: Sequence[str]) -> Iterator[None]:
    """Upstream's evaluator draws :func:`frame_of` frames and writes videos
    atomically while this is entered."""
    saved = {name: getattr(habitat_evaluator, name) for name in REPLACED}

    def observations_to_image(observation: Mapping[str, Any], info: Mapping[str, Any]) -> Any:
        return frame_of(observation, info, camera_keys)

    replacements = {
        "observations_to_image": observations_to_image,
        "overlay_frame": metrics_already_drawn,
        "generate_video": _atomic_video(saved["generate_video"]),
    }
    try:
        for name, function in replacements.items():
            setattr(habitat_evaluator, name, function)
        yield
    finally:
        for name, function in saved.items():
            setattr(habitat_evaluator, name, function)


def frame_of(
    observation: Mapping[str, Any], info: Mapping[str, Any], camera_keys: Sequence[str]
) -> np.ndarray:
    """One env's frame: its video camera (:func:`observation_camera`) and
    ``info``'s metrics beside it (:func:`video_frame`)."""
    return video_frame(observation_camera(observation, camera_keys), info)


def metrics_already_drawn(frame: np.ndarray, info: Any, additional: Any = None) -> np.ndarray:
    """Stands for upstream's ``overlay_frame``: :func:`frame_of` drew the
    metrics beside the image already, nothing goes over it."""
    return frame


def _atomic_video(generate_video: Any) -> Any:
    """Upstream's ``generate_video`` writing its mp4 into a temporary folder
    beside ``video_dir``, then renamed into ``video_dir``: a reader never
    sees half a video."""

    def generate(*args: Any, video_dir: Any = None, **kwargs: Any) -> Any:
        if video_dir is None:
            return generate_video(*args, video_dir=video_dir, **kwargs)
        os.makedirs(video_dir, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".video-", dir=video_dir)
        try:
            name = generate_video(*args, video_dir=staging, **kwargs)
            for written in os.listdir(staging):
                os.replace(os.path.join(staging, written), os.path.join(video_dir, written))
            return name
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    return generate
