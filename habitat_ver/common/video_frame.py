"""The frames of an evaluation video: the camera image, the metrics beside it.

habitat-lab's ``overlay_frame`` writes every metric over the image itself; a
HAB task has dozens of metrics, and at 128x128 their text covered the whole
frame.  :func:`video_frame` leaves the camera image untouched and writes the
metrics in a panel of their own to its right, of a fixed size, so every frame
of a video has the same shape whatever the metrics of that step.

Shapes: a camera image is ``[H, W, C]`` (C = 1, 3 or 4; uint8, or floats in
[0, 1] as habitat-lab's depth); a frame is ``[H, W + panel_width, 3]`` uint8.
"""

from typing import Any, Dict, List, Mapping, Sequence

import cv2
import numpy as np

# Width of the metric panel right of the camera image, in pixels.
PANEL_WIDTH = 320
# Panel background and text colours (RGB).
PANEL_COLOUR = (24, 24, 24)
TEXT_COLOUR = (235, 235, 235)
FONT = cv2.FONT_HERSHEY_SIMPLEX
FONT_SCALE = 0.42
FONT_THICKNESS = 1
# Pixels from one text line's baseline to the next, and around the text.
LINE_HEIGHT = 15
MARGIN = 8
# Metrics whose key holds this are listed first.
SUCCESS = "success"
# Stands for the characters cut from a key too long for the panel.
ELLIPSIS = ".."


def metric_lines(info: Mapping[str, Any]) -> List[str]:
    """``"key: value"`` of every scalar or string in ``info``: the success
    metrics first (what a video is watched for; the panel may not hold all),
    then the others, each group in ``info``'s order.

    Nested dicts are flattened with dotted keys (``pddl_stage_goals.stage_1_success``),
    numbers are written with two decimals, and other values (lists, arrays of
    more than one element) are left out.
    """
    lines: List[str] = []
    for key, value in sorted(_flat(info, ""), key=lambda item: SUCCESS not in item[0]):
        if isinstance(value, str):
            lines.append(f"{key}: {value}")
            continue
        array = np.asarray(value.cpu() if hasattr(value, "cpu") else value)
        if array.size == 1 and array.dtype.kind in "biuf":
            lines.append(f"{key}: {float(array.reshape(())):.2f}")
    return lines


def _flat(info: Mapping[str, Any], prefix: str) -> List[Any]:
    items = []
    for key, value in info.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            items.extend(_flat(value, f"{name}."))
        else:
            items.append((name, value))
    return items


def camera_rgb(image: Any) -> np.ndarray:
    """``image`` (``[H, W, C]``, a tensor or array) as ``[H, W, 3]`` uint8 RGB.

    Floats are taken to be in [0, 1] (habitat-lab's depth), as upstream's
    ``observations_to_image`` does; one channel is repeated, a fourth (alpha)
    dropped.

    Raises:
        ValueError: ``image`` is not ``[H, W, C]`` with C = 1, 3 or 4.
    """
    array = np.asarray(image.cpu() if hasattr(image, "cpu") else image)
    if array.ndim != 3 or array.shape[2] not in (1, 3, 4):
        raise ValueError(
            f"a camera image has shape [H, W, C] with C = 1, 3 or 4; got {array.shape}"
        )
    if array.dtype != np.uint8:
        array = (np.clip(array.astype(np.float32), 0.0, 1.0) * 255.0).astype(np.uint8)
    if array.shape[2] == 1:
        array = np.repeat(array, 3, axis=2)
    return np.ascontiguousarray(array[:, :, :3])


def _text_width(text: str) -> int:
    (width, _), _ = cv2.getTextSize(text, FONT, FONT_SCALE, FONT_THICKNESS)
    return int(width)


def _fitted(line: str, width: int) -> str:
    """``line`` cut from the start of its key until it fits ``width`` pixels
    (the key's end and the value are what tell metrics apart)."""
    if _text_width(line) <= width:
        return line
    for start in range(1, len(line)):
        shorter = ELLIPSIS + line[start:]
        if _text_width(shorter) <= width:
            return shorter
    return ELLIPSIS


def panel_lines(lines: Sequence[str], height: int, width: int) -> List[str]:
    """The lines a ``height`` x ``width`` panel shows: as many as fit, the
    last one saying how many more were left out, each cut to fit."""
    room = max(1, (height - MARGIN) // LINE_HEIGHT)
    shown = list(lines)
    if len(shown) > room:
        left_out = len(shown) - (room - 1)
        shown = shown[: room - 1] + [f"... {left_out} more"]
    return [_fitted(line, width - 2 * MARGIN) for line in shown]


def video_frame(camera: Any, info: Mapping[str, Any], panel_width: int = PANEL_WIDTH) -> np.ndarray:
    """One video frame: ``camera`` on the left, unchanged, the metrics of
    ``info`` (:func:`metric_lines`) in a panel on its right.

    Args:
        camera: ``[H, W, C]`` image (see :func:`camera_rgb`).
        info: the step's metrics (habitat's info dict).
        panel_width: the panel's width in pixels.

    Returns:
        ``[H, W + panel_width, 3]`` uint8; ``frame[:, :W]`` is ``camera_rgb(camera)``.

    Raises:
        ValueError: a bad ``camera`` shape, or ``panel_width`` < 1.
    """
    if panel_width < 1:
        raise ValueError(
            f"panel_width is the metric panel's width in pixels, >= 1; got {panel_width}"
        )
    image = camera_rgb(camera)
    height = image.shape[0]
    panel = np.empty((height, panel_width, 3), dtype=np.uint8)
    panel[:] = PANEL_COLOUR
    for row, line in enumerate(panel_lines(metric_lines(info), height, panel_width)):
        baseline = MARGIN + (row + 1) * LINE_HEIGHT - 4
        cv2.putText(
            panel,
            line,
            (MARGIN, baseline),
            FONT,
            FONT_SCALE,
            TEXT_COLOUR,
            FONT_THICKNESS,
            cv2.LINE_AA,
        )
    return np.concatenate([image, panel], axis=1)


def observation_camera(observation: Mapping[str, Any], camera_keys: Sequence[str]) -> Any:
    """The image a video shows from one env's ``observation``.

    The first of ``camera_keys`` (cameras added for the video only) the
    observation has; without one, the observation's images side by side
    (depth and colour as upstream's videos show them), on a common height.

    Raises:
        ValueError: the observation has no image (nothing of rank 3).
    """
    for key in camera_keys:
        if key in observation:
            return observation[key]
    images = [
        camera_rgb(value) for value in observation.values() if len(getattr(value, "shape", ())) == 3
    ]
    if not images:
        shapes: Dict[str, Any] = {k: tuple(getattr(v, "shape", ())) for k, v in observation.items()}
        raise ValueError(f"a video needs an image observation; the observations are {shapes}")
    height = max(image.shape[0] for image in images)
    padded = [np.pad(image, ((0, height - image.shape[0]), (0, 0), (0, 0))) for image in images]
    return np.concatenate(padded, axis=1)
