"""A contact sheet of an evaluation video: a few of its frames in one PNG.

Picks ``--frames`` frames evenly spaced over the video, labels each with its
step, tiles them ``--columns`` wide, scales the sheet to ``--width`` pixels and
writes it as a 256-colour PNG (small enough for the docs).  The last frame of a
habitat-baselines video is left out: upstream's evaluator shows the final
metrics there over a black image (the observation after the last step is the
next episode's).

    python -m habitat_ver.tools.video_contact_sheet \\
        outputs/hab/tidy_house_oracle/video/<episode>.mp4 --out tidy_house_oracle.png
"""

import argparse
import io
import os
import sys
from typing import Any, List, Optional, Sequence

import cv2
import imageio
import numpy as np
from PIL import Image

from habitat_ver.common.atomic import write_atomically

# Height of the strip above each frame that names its step, in pixels.
LABEL_HEIGHT = 22
LABEL_COLOUR = (255, 255, 255)
BACKGROUND = (0, 0, 0)


def picked_frames(count: int, wanted: int) -> List[int]:
    """``wanted`` indices evenly spaced from the first frame to the one before
    the last (the last is upstream's black frame); fewer if the video is short.

    Raises:
        ValueError: ``wanted`` < 1 or a video of fewer than 2 frames.
    """
    if wanted < 1:
        raise ValueError(f"--frames is the number of frames to show, >= 1; got {wanted}")
    if count < 2:
        raise ValueError(f"the video has {count} frame(s); a contact sheet needs at least 2")
    last = count - 2
    return sorted({int(round(i)) for i in np.linspace(0, last, min(wanted, last + 1))})


def contact_sheet(
    frames: Sequence[np.ndarray], steps: Sequence[int], columns: int, width: int
) -> np.ndarray:
    """``frames`` (each ``[H, W, 3]`` uint8, one shape) tiled ``columns`` wide,
    each under a strip naming its step, the whole scaled to ``width`` pixels.

    Raises:
        ValueError: no frames, frames of several shapes, ``columns`` or ``width`` < 1.
    """
    if not frames or len({f.shape for f in frames}) != 1:
        raise ValueError(f"frames of one shape are needed; got {[f.shape for f in frames]}")
    if columns < 1 or width < 1:
        raise ValueError(f"--columns and --width are >= 1; got {columns} and {width}")
    height, frame_width = frames[0].shape[:2]
    tiles = []
    for frame, step in zip(frames, steps):
        tile = np.zeros((LABEL_HEIGHT + height, frame_width, 3), dtype=np.uint8)
        tile[:] = BACKGROUND
        tile[LABEL_HEIGHT:] = frame
        cv2.putText(
            tile,
            f"step {step}",
            (6, LABEL_HEIGHT - 6),
            cv2.FONT_HERSHEY_SIMPLEX,
            0.55,
            LABEL_COLOUR,
            1,
            cv2.LINE_AA,
        )
        tiles.append(tile)
    blank = np.zeros_like(tiles[0])
    rows = []
    for start in range(0, len(tiles), columns):
        row = tiles[start : start + columns]
        rows.append(np.concatenate(row + [blank] * (columns - len(row)), axis=1))
    sheet = np.concatenate(rows, axis=0)
    scale = width / sheet.shape[1]
    size = (width, max(1, int(round(sheet.shape[0] * scale))))
    return cv2.resize(sheet, size, interpolation=cv2.INTER_AREA)


def read_frames(path: str, indices: Sequence[int]) -> List[np.ndarray]:
    """The frames of the video at ``path`` with these indices (RGB uint8)."""
    wanted = set(indices)
    frames = []
    reader: Any = imageio.get_reader(path)  # imageio types its readers as not iterable
    try:
        for index, frame in enumerate(reader):
            if index in wanted:
                frames.append(np.asarray(frame)[:, :, :3])
    finally:
        reader.close()
    return frames


def count_frames(path: str) -> int:
    """The number of frames of the video at ``path`` (decoded, not the header's)."""
    reader: Any = imageio.get_reader(path)
    try:
        return sum(1 for _ in reader)
    finally:
        reader.close()


def write_png(sheet: np.ndarray, path: str) -> int:
    """``sheet`` as a 256-colour PNG at ``path`` (atomic); returns its bytes."""
    buffer = io.BytesIO()
    Image.fromarray(sheet).quantize(colors=256).save(buffer, format="PNG", optimize=True)
    data = buffer.getvalue()
    write_atomically(path, lambda f: f.write(data))
    return len(data)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m habitat_ver.tools.video_contact_sheet",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("video", help="an mp4 written by an evaluation")
    parser.add_argument("--out", required=True, help="the PNG to write")
    parser.add_argument("--frames", type=int, default=6, help="frames to show (default 6)")
    parser.add_argument("--columns", type=int, default=2, help="frames per row (default 2)")
    parser.add_argument("--width", type=int, default=1280, help="sheet width in pixels")
    args = parser.parse_args(argv)
    try:
        if not os.path.isfile(args.video):
            raise ValueError(f"{args.video!r} is not a file")
        indices = picked_frames(count_frames(args.video), args.frames)
        sheet = contact_sheet(read_frames(args.video, indices), indices, args.columns, args.width)
        size = write_png(sheet, args.out)
    except (ValueError, OSError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: frames {indices} of {args.video}, {size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
