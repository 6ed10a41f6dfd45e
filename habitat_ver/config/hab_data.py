"""The downloaded data a rearrangement (HAB) config needs, and what fetches it.

habitat-lab's rearrangement tasks read ReplicaCAD, the YCB objects, the Fetch
robot and the episode files from disk; none of them ships with habitat-sim or
habitat-lab.  Without them a run ends deep inside habitat-lab's dataset loader
or the simulator.  :func:`check_hab_data` looks for every path the config
names before any environment is built and reports, in one line, each missing
data folder and the ``python -m habitat_sim.utils.datasets_download`` command
that fetches it.

The table below is habitat-sim 0.3.3's ``datasets_download`` (``link`` of each
uid, relative to its ``--data-path``); a test compares it with the installed
module where habitat-sim is present.
"""

import glob
import json
import os
from xml.etree import ElementTree
from typing import Any, Iterator, List, NamedTuple, Optional, Tuple

from omegaconf import OmegaConf

from habitat_ver.config.embedded_env import GYM_ENV_TASK
from habitat_ver.config.episode_files import check_split, read_episode_file, split_key
from habitat_ver.config.errors import ConfigError

# uid -> folder it fills, relative to datasets_download's --data-path, and
# what it is (for the message).  Only the uids rearrangement configs use.
DATA_SOURCES = {
    "replica_cad_dataset": ("replica_cad", "ReplicaCAD scenes"),
    "ycb": ("objects/ycb", "YCB objects"),
    "hab_fetch": ("robots/hab_fetch", "Fetch robot"),
    "hab_spot_arm": ("robots/hab_spot_arm", "Spot robot"),
    "hab_stretch": ("robots/hab_stretch", "Stretch robot"),
    "habitat_humanoids": ("humanoids/humanoid_data", "humanoids"),
    "rearrange_dataset_v2": ("datasets/replica_cad/rearrange", "HAB rearrangement episodes"),
    "rearrange_pick_dataset_v0": (
        "datasets/rearrange_pick/replica_cad/v0",
        "rearrange pick episodes",
    ),
    "hab2_bench_assets": ("hab2_bench_assets", "HAB2 benchmark assets"),
}
DOWNLOAD_MODULE = "habitat_sim.utils.datasets_download"
OBJECT_PATHS_KEY = "habitat.simulator.additional_object_paths"
# Folders of the data python -m habitat_ver.tools.make_hab_dataset writes
# (relative to its --out), and what they are.
GENERATED = {
    "datasets/hab_ver": "habitat-ver's HAB episodes",
    "hab_ver": "habitat-ver's HAB apartment",
}
GENERATOR = (
    "python -m habitat_ver.tools.make_hab_dataset "
    "--assets <folder with replica_cad/ and robots/hab_fetch/>"
)


class MissingData(NamedTuple):
    """One path a config needs that is not on disk.

    Attributes:
        key: the config key naming it.
        path: the path as configured.
        uid: the ``datasets_download`` uid that provides it (None if unknown).
        folder: the folder that uid fills (the path itself if unknown).
        data_path: ``--data-path`` for the download (the folder above the uid's).
    """

    key: str
    path: str
    uid: Optional[str]
    folder: str
    data_path: Optional[str]


class HabitatDataMissingError(ConfigError):
    """A rearrangement config names data that has not been downloaded."""


def source_of(path: str) -> Tuple[Optional[str], str, Optional[str]]:
    """``(uid, folder, data_path)`` of the download that provides ``path``.

    The uid's folder must appear in ``path`` as whole path components, e.g.
    ``data/robots/hab_fetch/robots/hab_suction.urdf`` -> ``hab_fetch``, folder
    ``data/robots/hab_fetch``, data path ``data/``.  The longest match wins
    (the episodes live under ``datasets/replica_cad``, not ``replica_cad``).
    """
    parts = os.path.normpath(path).split(os.sep)
    best: Tuple[Optional[str], str, Optional[str]] = (None, path, None)
    best_len = 0
    for uid, (link, _) in DATA_SOURCES.items():
        start = _first_match(parts, link)
        if start is not None and len(link.split("/")) > best_len:
            root = os.sep.join(parts[:start])
            folder = os.path.join(root, link) if root else link
            best = (uid, folder, (root or ".") + os.sep)
            best_len = len(link.split("/"))
    return best


def _first_match(parts: List[str], link: str) -> Optional[int]:
    """Where the folder ``link`` (``a/b``) first appears in ``parts`` as whole
    path components, or None."""
    link_parts = link.split("/")
    n = len(link_parts)
    return next((i for i in range(len(parts) - n + 1) if parts[i : i + n] == link_parts), None)


def needed_paths(config: Any) -> Iterator[Tuple[str, str]]:
    """``(key, path)`` of every data path a habitat config reads from disk."""
    habitat = config.habitat
    dataset = habitat.dataset
    split = dataset.split
    baselines = config.get("habitat_baselines")
    if baselines is not None and baselines.evaluate:
        # habitat-baselines evaluates on habitat_baselines.eval.split.
        split = baselines.eval.split
    yield "habitat.dataset.data_path", dataset.data_path.format(split=split)
    if dataset.get("scenes_dir"):
        yield "habitat.dataset.scenes_dir", dataset.scenes_dir
    simulator = habitat.simulator
    for i, path in enumerate(simulator.get("additional_object_paths") or []):
        yield f"{OBJECT_PATHS_KEY}[{i}]", path
    for name, agent in simulator.agents.items():
        prefix = f"habitat.simulator.agents.{name}."
        for field in ("articulated_agent_urdf", "motion_data_path"):
            if agent.get(field):
                yield prefix + field, agent[field]


def missing_hab_data(config: Any) -> List[MissingData]:
    """Every configured data path that does not exist, with its download."""
    missing = []
    for key, path in needed_paths(config):
        if not os.path.exists(path):
            uid, folder, data_path = source_of(path)
            missing.append(MissingData(key, path, uid, folder, data_path))
    return missing


def download_command(missing: List[MissingData]) -> Optional[str]:
    """The ``datasets_download`` command line fetching every known uid."""
    known = [(m.uid, m.data_path) for m in missing if m.uid is not None]
    if not known:
        return None
    roots = list(dict.fromkeys(root for _, root in known))
    # Several roots only when the config mixes them; each uid goes to its own.
    return " && ".join(
        _download_to(root, [uid for uid, where in known if where == root]) for root in roots
    )


def _download_to(data_path: Optional[str], uids: List[str]) -> str:
    """One ``datasets_download`` command line: ``uids`` (deduplicated) into ``data_path``."""
    unique = " ".join(dict.fromkeys(uids))
    return f"python -m {DOWNLOAD_MODULE} --uids {unique} --data-path {data_path}"


def describe_missing(missing: List[MissingData], reads_generated: bool = False) -> str:
    """One line: what is missing, what it is, and what makes or fetches it.

    A download whose folder is there but lacks a file names the file (the
    robot folder is there, its URDF is not), not the whole download.  Where
    the data root holds what ``make_hab_dataset`` made and the config reads
    HAB's downloads, the line says to add ``hab_data=generated``.

    Args:
        missing: :func:`missing_hab_data`'s list.
        reads_generated: the config reads make_hab_dataset's data (``hab_data=generated``).
    """
    parts: List[str] = []
    fetch = []
    generated = False
    for m in missing:
        made_by_us = _generated_folder(m.path)
        if made_by_us is not None:
            generated = True
            text = f"{made_by_us[0]}/ ({made_by_us[1]})"
        elif m.uid is None:
            text = f"{m.path} ({m.key}; no known download)"
        elif os.path.isdir(m.folder):
            text = _file_missing_from(m)
        else:
            text = f"{m.folder}/ ({DATA_SOURCES[m.uid][1]}, uid {m.uid})"
            fetch.append(m)
        if text not in parts:
            parts.append(text)
    line = f"rearrangement data is missing (relative to {os.getcwd()}): {', '.join(parts)}"
    ours = None if generated or reads_generated else _generated_data_beside(missing)
    if ours is not None:
        line += (
            f"; {ours} holds the apartment and episodes make_hab_dataset made: add "
            "`hab_data=generated` to the command to use them"
        )
    command = download_command(fetch)
    if command is not None:
        fetch_it = "or fetch HAB's downloads" if ours else "fetch it"
        line += f"; {fetch_it} with `{command}`"
    if generated:
        line += f"; make ours with `{GENERATOR}` in the folder that holds data/ (docs/HAB.md)"
    return line


def _file_missing_from(m: MissingData) -> str:
    """A file missing from a download folder that is there."""
    assert m.uid is not None
    what = DATA_SOURCES[m.uid][1]
    if os.path.islink(m.folder):  # make_hab_dataset links the assets' copy
        return (
            f"{m.path} ({m.key}): the {what} folder {m.folder}/ is there (a link to "
            f"{os.path.realpath(m.folder)}) but this file is not; restore it there"
        )
    return (
        f"{m.path} ({m.key}): the {what} folder {m.folder}/ is there but this file is not; "
        f"download it again with `{_download_to(m.data_path, [m.uid])}`"
    )


def _generated_data_beside(missing: List[MissingData]) -> Optional[str]:
    """The data root (``data/``) of the missing downloads where it holds
    make_hab_dataset's apartment and episodes, else None."""
    roots = dict.fromkeys(m.data_path for m in missing if m.data_path is not None)
    for root in roots:
        assert root is not None
        if all(os.path.isdir(os.path.join(root, folder)) for folder in GENERATED):
            return root
    return None


def _generated_folder(path: str) -> Optional[Tuple[str, str]]:
    """``(folder, what)`` when ``path`` lies in make_hab_dataset's output."""
    parts = os.path.normpath(path).split(os.sep)
    for link, what in GENERATED.items():
        start = _first_match(parts, link)
        if start is not None:
            return os.sep.join(parts[: start + len(link.split("/"))]), what
    return None


def is_rearrange_config(config: Any) -> bool:
    """True for configs whose env runs habitat-lab's rearrangement dataset."""
    return config.habitat.env_task != GYM_ENV_TASK and str(config.habitat.dataset.type).startswith(
        "RearrangeDataset"
    )


def check_hab_data(config: Any) -> None:
    """Raise :class:`HabitatDataMissingError` if a rearrange config's data is missing."""
    if not is_rearrange_config(config):
        return
    key, data_path = split_key(config), config.habitat.dataset.data_path
    split = OmegaConf.select(config, key)
    # A misspelled split is not missing data: name the splits there are.
    check_split(data_path, split, key, _remedy(data_path))
    missing = missing_hab_data(config)
    if os.path.isfile(data_path.format(split=split)):
        # habitat-sim only warns about a missing object folder; it matters
        # when an episode adds an object found nowhere else, and
        # check_hab_files names that object and the folder's download.
        missing = [m for m in missing if not m.key.startswith(OBJECT_PATHS_KEY)]
    if missing:
        reads_generated = any(_generated_folder(path) for _, path in needed_paths(config))
        raise HabitatDataMissingError(describe_missing(missing, reads_generated))
    check_hab_files(config)


def check_hab_files(config: Any) -> None:
    """The data files are there; check that they can be used, before any env starts.

    Raises:
        ConfigError: one line naming the file: an episode file that is not
            gzipped JSON with episodes, a scene dataset config an episode
            names that does not exist, an object an episode adds whose config
            is in none of the folders it is looked up in, a robot URDF that is
            not XML or names mesh files that do not exist.
    """
    key, path = next(needed_paths(config))  # habitat.dataset.data_path
    remedy = _remedy(path)
    episodes = read_episode_file(path, key, remedy)["episodes"]
    extra = list(config.habitat.simulator.get("additional_object_paths") or [])
    for scene_dataset in sorted({e.get("scene_dataset_config", "") for e in episodes} - {""}):
        if not os.path.exists(scene_dataset):
            raise ConfigError(
                f"{key}: the episode file {path!r} names the scene dataset config "
                f"{scene_dataset!r}, which does not exist (relative to {os.getcwd()}); {remedy}"
            )
        folders = extra + object_config_folders(scene_dataset)
        added = (
            o[0]
            for e in episodes
            if e.get("scene_dataset_config") == scene_dataset
            for o in e.get("rigid_objs", [])
        )
        for handle in sorted(set(added)):
            name = os.path.basename(handle)
            if not any(os.path.exists(os.path.join(folder, name)) for folder in folders):
                raise ConfigError(
                    f"{key}: the episode file {path!r} adds the object {handle!r}, whose "
                    f"config is in none of {folders} (the scene dataset's object paths and "
                    f"{OBJECT_PATHS_KEY}); {_object_remedy(extra) or remedy}"
                )
    for name, agent in config.habitat.simulator.agents.items():
        urdf = agent.get("articulated_agent_urdf")
        if urdf:
            check_urdf(urdf, f"habitat.simulator.agents.{name}.articulated_agent_urdf")


def _object_remedy(object_paths: List[str]) -> Optional[str]:
    """What fetches the missing ones of ``object_paths`` (None: none missing)."""
    absent = [p for p in object_paths if not os.path.exists(p)]
    if not absent:
        return None
    command = download_command([MissingData(OBJECT_PATHS_KEY, p, *source_of(p)) for p in absent])
    fetch = f"fetch it with `{command}`" if command else "make or fetch it"
    return f"{', '.join(absent)} does not exist: {fetch}"


def object_config_folders(scene_dataset: str) -> List[str]:
    """The folders a scene dataset config reads object configs from (its
    ``objects.paths[".json"]``, relative to its own folder, globs expanded)."""
    try:
        with open(scene_dataset) as f:
            attributes = json.load(f)
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"the scene dataset config {scene_dataset!r} cannot be read: {error}"
        ) from None
    base = os.path.dirname(scene_dataset)
    patterns = attributes.get("objects", {}).get("paths", {}).get(".json", [])
    return [folder for p in patterns for folder in sorted(glob.glob(os.path.join(base, p)))]


def _remedy(path: str) -> str:
    if _generated_folder(path) is not None:
        return f"make it again with `{GENERATOR}`"
    uid, _, data_path = source_of(path)
    return f"download it again with `{_download_to(data_path, [uid])}`" if uid else ""


def check_urdf(path: str, key: str) -> None:
    """Raise one ConfigError if the robot URDF at ``path`` would not load:
    not XML, or a mesh it names is missing (paths relative to the URDF)."""
    try:
        root = ElementTree.parse(path).getroot()
    except (ElementTree.ParseError, OSError) as error:
        raise ConfigError(f"{key}: the robot URDF {path!r} cannot be read: {error}") from None
    folder = os.path.dirname(path)
    meshes = [m.get("filename", "") for m in root.iter("mesh")]
    missing = [m for m in meshes if m and not os.path.exists(os.path.join(folder, m))]
    if missing:
        raise ConfigError(
            f"{key}: the robot URDF {path!r} names {len(missing)} mesh file(s) that do not "
            f"exist, e.g. {missing[0]!r} (relative to {folder})"
        )
