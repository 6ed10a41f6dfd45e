"""A small PointNav dataset on habitat-sim's test stages, with no downloads.

Loads each stage with habitat-lab's own simulator (``Sim-v0``, the same class
and navmesh settings the PointNav task uses, so the navmesh is computed at load
exactly as in training), samples start/goal pairs on the navmesh whose geodesic
distance lies in ``[min_geodesic, max_geodesic]``, and writes habitat-lab's
``PointNav-v1`` episode format (``{split}/{split}.json.gz``) for a train and a
val split.  The stages are copied beside the episodes, so the dataset folder is
self-contained::

    <out>/scene_datasets/habitat_ver/simple_room.glb
    <out>/datasets/pointnav/simple_room/v1/train/train.json.gz
    <out>/datasets/pointnav/simple_room/v1/val/val.json.gz

A furnished scene of a scene dataset (``--scene-dataset``, e.g. the apartment
``make_hab_dataset`` writes) is given as its ``*.scene_instance.json`` and is
not copied: its episodes name it relative to ``scene_datasets`` (habitat-lab
joins the two) and carry the scene dataset's path as given (habitat-lab
configures the simulator with each episode's ``scene_dataset_config``; like
HAB's episodes, the path is relative to the folder runs start in).  Episodes
on a stage keep the ``default`` scene dataset, so one dataset can mix both, as
the mixed-scene benchmark does::

    python -m habitat_ver.tools.make_pointnav_dataset --stage simple_room.glb \
        --scene-dataset data/hab_ver/hab_ver.scene_dataset_config.json \
        --stage data/hab_ver/scenes/hab_ver_v3_sc0_staging_00.scene_instance.json

Run from the repository root (the ``pointnav/*`` configs read ``data/``)::

    python -m habitat_ver.tools.make_pointnav_dataset

The splits are written into a hidden folder beside the dataset's
(``.<name>.partial-<host>-<pid>``), which is then renamed into place, so a run
killed mid-write or stopped by a full disk leaves the old complete dataset or
none, never one split of a new one beside another of the old; the next run
removes a killed run's hidden folder.  The stages are copied one atomic file
at a time.

The console shows one line per file written; habitat-lab's and habitat-sim's
output goes to ``<out>/make_pointnav_dataset.log``, named on the first line.
"""

import argparse
import gzip
import json
import os
import shutil
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from habitat_ver.common.atomic import folder_written_whole, write_atomically
from habitat_ver.tools.tool_log import output_to_log

# Where the habitat-ver checkout keeps habitat-sim's test assets (see README).
DEFAULT_STAGES_DIR = os.path.join("..", "shared", "habitat-sim", "data", "test_assets", "scenes")
DEFAULT_STAGES = ("simple_room.glb",)
DEFAULT_OUT = "data"
# Sub-folder of scene_datasets the stages are copied into; episodes name
# scenes relative to scene_datasets, as habitat-lab's datasets do.
SCENES_SUBDIR = "habitat_ver"
COMMAND = "python -m habitat_ver.tools.make_pointnav_dataset"
# Where habitat-lab's and habitat-sim's output goes, under --out.
LOG_FILE = "make_pointnav_dataset.log"
# Goals closer than this to the start are trivial; habitat-lab's
# success_distance is 0.2 m.
GOAL_RADIUS = 0.2
# Points on navmesh islands smaller than this are furniture tops, not floor
# (the value habitat-lab's own generator uses).
ISLAND_RADIUS_LIMIT = 1.5
# Start and goal on one floor: at most this height difference (metres), and
# at most this far above the lowest navigable point (a ceiling's top is an
# island of its own on a closed stage).
MAX_HEIGHT_DIFFERENCE = 0.5
# Navigable points sampled to find a scene's lowest floor.
FLOOR_SAMPLES = 200
SCENE_INSTANCE_SUFFIX = ".scene_instance.json"
SPLIT_SEEDS = {"train": 0, "val": 1}
# A split's file inside the dataset's folder (habitat's data_path pattern).
SPLIT_FILE = os.path.join("v1", "{split}", "{split}.json.gz")


def dataset_root(out: str, name: str) -> str:
    """The folder holding every split of the dataset ``name`` (replaced whole)."""
    return os.path.join(out, "datasets", "pointnav", name)


def dataset_paths(out: str, name: str) -> Dict[str, str]:
    """The folders a dataset called ``name`` is written to under ``out``.

    Returns:
        ``scenes_dir`` (habitat's ``habitat.dataset.scenes_dir``) and
        ``data_path`` (``habitat.dataset.data_path``, with ``{split}``).
    """
    return {
        "scenes_dir": os.path.join(out, "scene_datasets"),
        "data_path": os.path.join(dataset_root(out, name), SPLIT_FILE),
    }


def _make_sim(scene_path: str, scene_dataset: Optional[str] = None) -> Any:
    """habitat-lab's PointNav simulator on one stage (or scene of
    ``scene_dataset``), without sensors.

    The navmesh is computed at load with habitat-lab's default agent settings
    (``default_agent_navmesh``), the same the PointNav task gets.
    """
    import habitat_ver  # noqa: F401  (registration before habitat)
    import habitat
    from habitat.config import read_write
    from habitat.sims import make_sim

    config = habitat.get_config("benchmark/nav/pointnav/pointnav_habitat_test.yaml")
    with read_write(config):
        sim_config = config.habitat.simulator
        sim_config.scene = os.path.abspath(scene_path)
        if scene_dataset is not None:
            sim_config.scene_dataset = os.path.abspath(scene_dataset)
        # No sensors are read here; with none, no renderer is needed either.
        sim_config.agents.main_agent.sim_sensors = {}
        sim_config.habitat_sim_v0.gpu_device_id = -1
    return make_sim("Sim-v0", config=sim_config)


def _yaw_quaternion(angle: float) -> List[float]:
    # habitat's [x, y, z, w] order, a rotation about the vertical (y) axis.
    return [0.0, float(np.sin(angle / 2)), 0.0, float(np.cos(angle / 2))]


def sample_episodes(
    sim: Any,
    scene_id: str,
    num_episodes: int,
    min_geodesic: float,
    max_geodesic: float,
    seed: int,
    max_tries: int = 100000,
    scene_dataset: Optional[str] = None,
) -> List[Dict[str, Any]]:
    """Start/goal pairs on one stage's navmesh, as ``PointNav-v1`` dicts.

    Args:
        sim: a habitat-lab simulator with the stage loaded.
        scene_id: the episode's ``scene_id`` (relative to ``scenes_dir``).
        num_episodes: how many episodes to return.
        min_geodesic: shortest allowed geodesic start-goal distance (m).
        max_geodesic: longest allowed geodesic start-goal distance (m).
        seed: seeds the navmesh sampler and the start headings.
        max_tries: sampled pairs before giving up (a stage too small or too
            fragmented for the distance range).
        scene_dataset: the episodes' ``scene_dataset_config`` (None: habitat's
            default, left out of the dicts).

    Returns:
        ``num_episodes`` episode dicts, with ``info.geodesic_distance``.

    Raises:
        ValueError: when ``max_tries`` pairs gave too few episodes.
    """
    sim.pathfinder.seed(seed)
    floor = min(sim.pathfinder.get_random_navigable_point()[1] for _ in range(FLOOR_SAMPLES))
    sim.pathfinder.seed(seed)  # the episodes do not depend on FLOOR_SAMPLES
    rng = np.random.default_rng(seed)
    episodes: List[Dict[str, Any]] = []
    for _ in range(max_tries):
        if len(episodes) == num_episodes:
            return episodes
        start = np.asarray(sim.pathfinder.get_random_navigable_point(), dtype=np.float64)
        goal = np.asarray(sim.pathfinder.get_random_navigable_point(), dtype=np.float64)
        if max(start[1], goal[1]) > floor + MAX_HEIGHT_DIFFERENCE:
            continue
        geodesic = float(sim.geodesic_distance(start, [goal]))
        if not min_geodesic <= geodesic <= max_geodesic:  # inf: unreachable
            continue
        if min(sim.island_radius(start), sim.island_radius(goal)) < ISLAND_RADIUS_LIMIT:
            continue
        episodes.append(
            {
                "episode_id": str(len(episodes)),
                "scene_id": scene_id,
                **({"scene_dataset_config": scene_dataset} if scene_dataset else {}),
                "start_position": start.tolist(),
                "start_rotation": _yaw_quaternion(rng.uniform(0.0, 2.0 * np.pi)),
                "goals": [{"position": goal.tolist(), "radius": GOAL_RADIUS}],
                "info": {
                    "geodesic_distance": geodesic,
                    "euclidean_distance": float(np.linalg.norm(goal - start)),
                },
            }
        )
    raise ValueError(
        f"{scene_id}: only {len(episodes)} of {num_episodes} episodes with a geodesic "
        f"distance in [{min_geodesic}, {max_geodesic}] m after {max_tries} samples; "
        "widen --min-geodesic/--max-geodesic"
    )


def write_split(path: str, episodes: Sequence[Dict[str, Any]]) -> None:
    """Write one split as habitat-lab's gzipped ``{"episodes": [...]}``."""
    payload = json.dumps({"episodes": list(episodes)}).encode()
    write_atomically(path, lambda f: f.write(gzip.compress(payload, mtime=0)))


def _copy_stage(stage: str, scenes_dir: str) -> str:
    """Copy a stage into ``scenes_dir/habitat_ver``; returns its scene id."""
    scene_id = f"{SCENES_SUBDIR}/{os.path.basename(stage)}"

    def copy(f: Any) -> None:
        with open(stage, "rb") as src:
            shutil.copyfileobj(src, f)

    write_atomically(os.path.join(scenes_dir, scene_id), copy)
    return scene_id


def _scene_id(stage: str, scenes_dir: str) -> str:
    """The episodes' ``scene_id`` of ``stage``: a stage is copied into
    ``scenes_dir``; a scene instance stays where it is, named relative to it."""
    if stage.endswith(SCENE_INSTANCE_SUFFIX):
        return os.path.relpath(os.path.abspath(stage), os.path.abspath(scenes_dir))
    return _copy_stage(stage, scenes_dir)


def make_dataset(
    stages: Sequence[str],
    out: str,
    name: str,
    episodes_per_split: Dict[str, int],
    min_geodesic: float,
    max_geodesic: float,
    scene_dataset: Optional[str] = None,
    log: Optional[Callable[[str], None]] = None,
) -> Dict[str, str]:
    """Generate every split for ``stages`` (stage ``.glb`` files, or scene
    instances of ``scene_dataset``); see the module docstring.

    Args:
        log: called with one line per file written (None: silent).

    Returns:
        :func:`dataset_paths` of the written dataset.
    """
    log = log or (lambda line: None)
    paths = dataset_paths(out, name)
    per_split: Dict[str, List[Dict[str, Any]]] = {s: [] for s in episodes_per_split}
    # A scene instance's id climbs out of scenes_dir ("../"): it must exist.
    os.makedirs(paths["scenes_dir"], exist_ok=True)
    for stage_index, stage in enumerate(stages):
        scene_id = _scene_id(stage, paths["scenes_dir"])
        if not stage.endswith(SCENE_INSTANCE_SUFFIX):
            log(f"{os.path.join(paths['scenes_dir'], scene_id)}: stage copied from {stage}")
        sim = _make_sim(os.path.join(paths["scenes_dir"], scene_id), scene_dataset)
        try:
            if not sim.pathfinder.is_loaded:
                raise ValueError(f"{stage}: habitat-sim could not build a navmesh on this stage")
            in_dataset = scene_dataset if stage.endswith(SCENE_INSTANCE_SUFFIX) else None
            for split, count in episodes_per_split.items():
                seed = 1000 * stage_index + SPLIT_SEEDS.get(split, len(SPLIT_SEEDS))
                per_split[split] += sample_episodes(
                    sim,
                    scene_id,
                    count,
                    min_geodesic,
                    max_geodesic,
                    seed,
                    scene_dataset=in_dataset,
                )
        finally:
            sim.close()
    for episodes in per_split.values():
        for index, episode in enumerate(episodes):
            episode["episode_id"] = str(index)
    write_splits(dataset_root(out, name), per_split)
    for split, episodes in per_split.items():
        scenes = len({e["scene_id"] for e in episodes})
        log(
            f"{paths['data_path'].format(split=split)}: {len(episodes)} episodes "
            f"on {scenes} scene(s)"
        )
    return paths


def write_splits(root: str, per_split: Dict[str, List[Dict[str, Any]]]) -> None:
    """Write every split under ``root`` (:data:`SPLIT_FILE`) so that they
    appear together, replacing the folder's old content whole.

    Raises:
        FileWriteError: a split could not be written; ``root`` is unchanged.
        OSError: the folder could not be renamed into place; ``root`` is the
            old dataset, or absent.
    """
    with folder_written_whole(root) as partial:
        for split, episodes in per_split.items():
            write_split(os.path.join(partial, SPLIT_FILE.format(split=split)), episodes)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=COMMAND,
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--stages-dir",
        default=DEFAULT_STAGES_DIR,
        help="folder holding the stages (default: %(default)s)",
    )
    parser.add_argument(
        "--stage",
        action="append",
        dest="stages",
        help="stage file name or path, repeatable (default: simple_room.glb)",
    )
    parser.add_argument(
        "--scene-dataset",
        default=None,
        help="a *.scene_dataset_config.json whose scene instances (*.scene_instance.json) "
        "--stage may name",
    )
    parser.add_argument("--out", default=DEFAULT_OUT, help="data root (default: %(default)s)")
    parser.add_argument(
        "--name", default=None, help="dataset name (default: the stage names joined by '+')"
    )
    parser.add_argument("--train-episodes", type=int, default=500)
    parser.add_argument("--val-episodes", type=int, default=50)
    parser.add_argument("--min-geodesic", type=float, default=1.0, help="metres")
    parser.add_argument("--max-geodesic", type=float, default=3.0, help="metres")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Command-line entry point; bad input exits 2 with one line."""
    args = _parser().parse_args(argv)
    stages = [
        s if os.path.isabs(s) or os.path.exists(s) else os.path.join(args.stages_dir, s)
        for s in (args.stages or DEFAULT_STAGES)
    ]
    errors = [f"stage {s!r} not found" for s in stages if not os.path.isfile(s)]
    if args.scene_dataset is not None and not os.path.isfile(args.scene_dataset):
        errors.append(f"--scene-dataset {args.scene_dataset!r} not found")
    instances = [s for s in stages if s.endswith(SCENE_INSTANCE_SUFFIX)]
    if instances and args.scene_dataset is None:
        errors.append(f"{instances[0]!r} is a scene instance: pass its --scene-dataset")
    if not 0 < args.min_geodesic <= args.max_geodesic:
        errors.append(
            f"--min-geodesic={args.min_geodesic} and --max-geodesic="
            f"{args.max_geodesic}: need 0 < min <= max"
        )
    if args.train_episodes < 1 or args.val_episodes < 1:
        errors.append("--train-episodes and --val-episodes must be >= 1")
    if errors:
        print(
            f"{COMMAND}: error: {'; '.join(errors)} (habitat-sim's test stages are in "
            "habitat-sim's data/test_assets/scenes; pass --stages-dir)",
            file=sys.stderr,
        )
        sys.exit(2)
    name = args.name or "+".join(os.path.basename(s).split(".")[0] for s in stages)
    try:
        with output_to_log(os.path.join(args.out, LOG_FILE), COMMAND) as say:
            paths = make_dataset(
                stages,
                args.out,
                name,
                {"train": args.train_episodes, "val": args.val_episodes},
                args.min_geodesic,
                args.max_geodesic,
                args.scene_dataset,
                log=say,
            )
    except ValueError as error:
        print(f"{COMMAND}: error: {error}", file=sys.stderr)
        sys.exit(2)
    except OSError as error:  # a full disk, a read-only --out
        print(
            f"{COMMAND}: error: {error}; no dataset was written (an old one at "
            f"{dataset_root(args.out, name)} is unchanged)",
            file=sys.stderr,
        )
        sys.exit(1)
    print(f"dataset {name!r}: habitat.dataset.data_path={paths['data_path']}")


if __name__ == "__main__":
    main()
