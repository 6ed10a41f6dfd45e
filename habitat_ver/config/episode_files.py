"""A dataset's episode files and the scene files they name, read before any env starts.

habitat-lab reads episode files (``.json.gz``) in every env worker and loads a
scene only when an env reaches its episode; a corrupt file or a missing scene
was a traceback per worker that named neither (``gzip.BadGzipFile``,
``JSONDecodeError``, ``ESP_CHECK failed: No Stage Attributes``).  These
functions read the same files up front and raise one :class:`ConfigError`
naming the file and what is wrong with it:

* :func:`read_episode_file`: any habitat ``.json.gz`` episode file
  (PointNav, rearrangement);
* :func:`scene_file` and :func:`check_scene_files`: the scene files
  ``PointNav-v1`` episodes name, under ``habitat.dataset.scenes_dir``;
* :func:`check_scenes_dir`: the folder itself (habitat-lab reported a missing
  one as a missing dataset file);
* :func:`check_split`: a split with no episode file beside splits that have
  one (a misspelled split read as missing data).
"""

import glob
import gzip
import json
import os
import re
import zlib
from typing import Any, Dict, Iterable, List, Optional

from habitat_ver.config.errors import ConfigError, check

SCENES_DIR_KEY = "habitat.dataset.scenes_dir"
# habitat-lab's PointNavDatasetV1 drops this prefix from a scene id before
# joining it to scenes_dir (datasets written for the default layout).
DEFAULT_SCENE_PATH_PREFIX = "data/scene_datasets/"
# The start of a file shown when it is not gzip.
_SHOWN_BYTES = 8


def _read_gzip_text(path: str) -> str:
    with gzip.open(path, "rb") as f:
        return f.read().decode("utf-8")


def _what_is_wrong(path: str, error: Exception) -> str:
    """The problem ``error`` (raised reading ``path``) means, in words."""
    if isinstance(error, FileNotFoundError):
        return "does not exist"
    if isinstance(error, gzip.BadGzipFile) and str(error).startswith("Not a gzipped file"):
        with open(path, "rb") as f:
            start = f.read(_SHOWN_BYTES)
        return f"is not a gzip file (it starts with {start!r})"
    if isinstance(error, EOFError):
        return "is truncated (its gzip stream ends before the end-of-stream marker)"
    if isinstance(error, (gzip.BadGzipFile, zlib.error)):
        return f"is a corrupt gzip file ({error})"
    if isinstance(error, UnicodeDecodeError):
        return f"is not UTF-8 text once decompressed (byte {error.start}: {error.reason})"
    if isinstance(error, json.JSONDecodeError):
        return f"is not valid JSON (line {error.lineno} column {error.colno}: {error.msg})"
    if isinstance(error, OSError):
        return f"cannot be read ({error.strerror or error})"
    return f"cannot be read ({type(error).__name__}: {error})"


def read_episode_file(path: str, key: str, remedy: str = "") -> Dict[str, Any]:
    """The JSON object of a gzipped habitat episode file, checked.

    Args:
        path: the ``.json.gz`` file.
        key: the config key that names it (e.g. ``habitat.dataset.data_path``).
        remedy: what fixes it (e.g. the command that generates the dataset),
            appended to the message.

    Returns:
        The file's object; it has an ``episodes`` list.

    Raises:
        ConfigError: ``"<key>: the episode file '<path>' <what is wrong>[; <remedy>]"``.
    """
    try:
        content = json.loads(_read_gzip_text(path))
        problem = None
        if not isinstance(content, dict) or not isinstance(content.get("episodes"), list):
            problem = 'is not an episode file: it has no "episodes" list at the top'
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as error:
        problem = _what_is_wrong(path, error)
    if problem is not None:
        raise ConfigError(
            f"{key}: the episode file {path!r} {problem}" + (f"; {remedy}" if remedy else "")
        )
    return content


def scene_file(scene_id: str, scenes_dir: Optional[str]) -> str:
    """The file habitat-lab's ``PointNav-v1`` loads for an episode's ``scene_id``
    (its ``from_json``: the default prefix dropped, joined to ``scenes_dir``;
    an absolute ``scene_id`` stays as it is)."""
    if not scenes_dir:
        return scene_id
    if scene_id.startswith(DEFAULT_SCENE_PATH_PREFIX):
        scene_id = scene_id[len(DEFAULT_SCENE_PATH_PREFIX) :]
    return os.path.join(scenes_dir, scene_id)


def check_scenes_dir(scenes_dir: str, key: str = SCENES_DIR_KEY) -> None:
    """``scenes_dir`` is a folder.

    Raises:
        ConfigError: naming ``key`` and the folder.
    """
    check(
        os.path.isdir(scenes_dir),
        key,
        scenes_dir,
        "no such folder; the scene files the episodes name are looked up in it",
    )


def check_scene_files(
    episodes: Iterable[Dict[str, Any]],
    scenes_dir: Optional[str],
    episode_file: str,
    remedy: str = "",
) -> None:
    """Every episode's scene file exists.

    Args:
        episodes: episode dicts (``scene_id`` read from each).
        scenes_dir: ``habitat.dataset.scenes_dir`` (see :func:`scene_file`).
        episode_file: the file the episodes come from, for the message.
        remedy: appended to the message.

    Raises:
        ConfigError: naming the first missing scene file, how many episodes
            of ``episode_file`` name it, and how many other scene files are missing.
    """
    exists: Dict[str, bool] = {}
    missing: Dict[str, int] = {}
    for index, episode in enumerate(episodes):
        scene_id = episode.get("scene_id") if isinstance(episode, dict) else None
        if not isinstance(scene_id, str):
            raise ConfigError(
                f"the episode file {episode_file!r} is not a PointNav episode file: "
                f"its episode {index} has no scene_id string"
            )
        path = scene_file(scene_id, scenes_dir)
        if path not in exists:
            exists[path] = os.path.isfile(path)
        if not exists[path]:
            missing[path] = missing.get(path, 0) + 1
    if not missing:
        return
    first, count = next(iter(missing.items()))
    others = f"; {len(missing) - 1} other scene file(s) are missing too" if len(missing) > 1 else ""
    raise ConfigError(
        f"the scene file {first!r} does not exist: {count} episode(s) of {episode_file!r} "
        f"name it ({SCENES_DIR_KEY}={scenes_dir!r}){others}" + (f"; {remedy}" if remedy else "")
    )


def scene_name(scene_id: str) -> str:
    """habitat's ``Dataset.scene_from_scene_path``: the file name up to its first dot
    (what ``habitat.dataset.content_scenes`` lists)."""
    return os.path.basename(scene_id).split(".")[0]


def selected_episodes(episodes: List[Dict[str, Any]], content_scenes: List[str]) -> List[Any]:
    """The episodes ``habitat.dataset.content_scenes`` keeps ("*": all)."""
    if "*" in content_scenes:
        return episodes
    wanted = set(content_scenes)
    return [
        e
        for e in episodes
        if not isinstance(e, dict)
        or not isinstance(e.get("scene_id"), str)
        or scene_name(e["scene_id"]) in wanted
    ]


def split_key(config: Any) -> str:
    """The key that picks the split a run reads: habitat-baselines evaluates
    on ``habitat_baselines.eval.split``, trains on ``habitat.dataset.split``."""
    baselines = config.get("habitat_baselines")
    if baselines is not None and baselines.evaluate:
        return "habitat_baselines.eval.split"
    return "habitat.dataset.split"


def existing_splits(data_path: str) -> List[str]:
    """The splits that have an episode file, sorted.

    Args:
        data_path: ``habitat.dataset.data_path``, a template naming the split
            as ``{split}`` (once or more: ``.../{split}/{split}.json.gz``).
    """
    parts = data_path.split("{split}")
    if len(parts) < 2:
        return []
    pattern = "*".join(glob.escape(part) for part in parts)
    # Every {split} of one path must be the same name.
    template = re.compile(
        re.escape(parts[0]) + "(?P<split>[^/]+)" + "(?P=split)".join(map(re.escape, parts[1:]))
    )
    found = (template.fullmatch(path) for path in glob.glob(pattern))
    return sorted({match["split"] for match in found if match is not None})


def check_split(data_path: str, split: str, key: str, remedy: str = "") -> None:
    """Raise one ConfigError naming ``split`` and the splits that exist when
    ``split`` has no episode file but other splits have one (without any,
    the data itself is missing: the caller's check says what makes it).

    Args:
        data_path: ``habitat.dataset.data_path`` (a template with ``{split}``).
        split: the split the run reads.
        key: the key that chose it (:func:`split_key`).
        remedy: what makes the split's file, for a split that was meant
            (e.g. ``make it again with `...```).
    """
    path = data_path.format(split=split)
    if os.path.exists(path):
        return
    splits = existing_splits(data_path)
    also = f"; to use this split, {remedy}" if remedy else ""
    check(
        not splits,
        key,
        split,
        f"there is no {path} (habitat.dataset.data_path={data_path!r}); "
        f"the splits there are {', '.join(splits)}{also}",
    )
