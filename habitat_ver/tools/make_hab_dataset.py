"""HAB rearrangement data of our own: furnished apartments and their episodes.

Writes, under ``--out`` (default ``data``, habitat's usual data folder)::

    replica_cad -> <assets>/replica_cad            (links, nothing copied)
    robots/hab_fetch -> <assets>/robots/hab_fetch
    hab_ver/                                       our scenes (habitat_ver.tools.hab_scene)
    datasets/hab_ver/v1/{train,val}/<name>.json.gz episodes

One scene per ReplicaCAD arrangement: the train episodes are on the train
arrangements, the val episodes on the val ones (disjoint, as HAB's split:
:data:`hab_scene.TRAIN_ARRANGEMENTS`, :data:`hab_scene.VAL_ARRANGEMENTS`;
``--arrangements TRAIN VAL`` says how many of each).  Each file's episodes of
a split are shared out evenly over the split's arrangements.

The episodes are made by habitat-lab's own ``RearrangeEpisodeGenerator``, from
habitat-lab's own generator configs (``habitat/datasets/rearrange/configs``)
with the scene, objects and receptacles replaced by ours (see :data:`DATASETS`):
ReplicaCAD's small objects stand in for the YCB objects, which are not in our
copy.  The file names are those of HAB's ``rearrange_dataset_v2``, so the
``rearrange/*`` and ``hab/*`` configs read them with the one override
``hab_data=generated``::

    python -m habitat_ver.tools.make_hab_dataset --assets ../shared/habitat-data
    python -m habitat_baselines.run --config-name=rearrange/ver_pick hab_data=generated

The episode folder is written whole or not at all: every file goes into a
temporary folder that replaces ``v1`` at the end, so a run killed midway (or a
full disk) leaves the previous complete episodes, or none.  With ``--only``,
the other files already there are carried into the new folder unchanged (a
file on a scene not made by this run, another ``--arrangements``, is dropped
with a line saying so)::

    # 200 train and 50 val pick episodes, the other files kept
    python -m habitat_ver.tools.make_hab_dataset --assets ../shared/habitat-data \
        --only rearrange_easy --episodes 200 50

Each episode file is also kept, as soon as it is made, in a hidden folder
beside ``v1`` (:func:`progress_dir`) until the run ends: a run stopped midway
(Ctrl-C, a kill) and started again with the same arguments takes the files
made before from there and makes only the rest.

The console shows one line per scene (its furniture and floor) and per
episode file;
habitat-lab's generator log and habitat-sim's output go to
``<out>/make_hab_dataset.log``, named on the first line.
"""

import argparse
import contextlib
import functools
import glob
import gzip
import hashlib
import json
import os
import random
import shutil
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from habitat_ver.common.atomic import folder_written_whole, write_atomically
from habitat_ver.system.stop_signals import raised_by_ctrl_c
from habitat_ver.tools import hab_scene
from habitat_ver.tools.hab_episode_specs import DATASETS, OBJECTS, RECEPTACLE_SETS, DatasetSpec
from habitat_ver.tools.tool_log import output_to_log

COMMAND = "python -m habitat_ver.tools.make_hab_dataset"
DEFAULT_ASSETS = os.path.join("..", "shared", "habitat-data")
DEFAULT_OUT = "data"
EPISODES_SUBDIR = os.path.join("datasets", "hab_ver", "v1")
# The files a run made so far, for a run stopped midway and started again.
PROGRESS_SUBDIR = os.path.join("datasets", "hab_ver", ".v1.made")
SPLIT_SEEDS = {"train": 0, "val": 1}
# Navigable indoor floor (m^2) below which a scene is refused: room for the
# robot to reach more than one receptacle.
MIN_FLOOR_AREA = 10.0
# Calls of habitat-lab's generator per file and scene before giving up on the count.
GENERATION_ROUNDS = 5
# Where habitat-lab's and habitat-sim's output goes, under --out.
LOG_FILE = "make_hab_dataset.log"


class AssetsMissingError(Exception):
    """The robot or ReplicaCAD is not where ``--assets`` points."""


class GenerationError(RuntimeError):
    """habitat-lab's generator made too few episodes (its log says why)."""


def check_assets(assets: str) -> None:
    """Raise :class:`AssetsMissingError` naming every missing asset folder."""
    needed = {
        os.path.join(assets, "replica_cad", "configs", "objects"): "ReplicaCAD objects",
        os.path.join(assets, "replica_cad", "urdf", "fridge"): "ReplicaCAD fridge",
        os.path.join(
            assets, "replica_cad", "urdf", "kitchen_counter"
        ): "ReplicaCAD kitchen counter",
        os.path.join(assets, "robots", "hab_fetch", "robots", "hab_suction.urdf"): "Fetch robot",
    }
    missing = [f"{path} ({what})" for path, what in needed.items() if not os.path.exists(path)]
    if missing:
        raise AssetsMissingError(
            f"HAB assets missing under --assets {assets}: {', '.join(missing)}; point --assets "
            "at a folder holding replica_cad/ and robots/hab_fetch/ (on our machines "
            f"{DEFAULT_ASSETS}; elsewhere `python -m habitat_sim.utils.datasets_download "
            "--uids replica_cad_dataset hab_fetch --data-path <folder>`)"
        )


def link_assets(assets: str, out: str) -> None:
    """Link ``<out>/replica_cad`` and ``<out>/robots/hab_fetch`` to the assets
    (an existing folder there is kept: it is the same data)."""
    for rel in ("replica_cad", os.path.join("robots", "hab_fetch")):
        link = os.path.join(out, rel)
        if os.path.lexists(link):
            continue
        os.makedirs(os.path.dirname(link) or ".", exist_ok=True)
        os.symlink(os.path.abspath(os.path.join(assets, rel)), link)


def episodes_dir(out: str) -> str:
    """Where the episode files of every split go."""
    return os.path.join(out, EPISODES_SUBDIR)


def progress_dir(out: str) -> str:
    """Where a run keeps each episode file it made until the run ends."""
    return os.path.join(out, PROGRESS_SUBDIR)


def progress_file(out: str, spec: DatasetSpec, splits: Dict[str, List[str]], counts: Any) -> str:
    """The kept texts of ``spec`` made with these arrangements and counts (the
    name changes with any of them, or with the spec, so nothing stale is taken)."""
    key = json.dumps([repr(spec), splits, dict(counts)], sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(progress_dir(out), f"{spec.name}-{digest}.json.gz")


def _made_before(path: str) -> Optional[Dict[str, str]]:
    """The texts by split in a kept file, or None (absent or unreadable)."""
    try:
        with open(path, "rb") as f:
            texts = json.loads(gzip.decompress(f.read()))
    except (OSError, ValueError):
        return None
    return texts if isinstance(texts, dict) else None


def generator_config(spec: DatasetSpec, scene_dir: str, scene: str) -> Any:
    """habitat-lab's generator config for ``spec``, on our scenes and objects,
    starting on ``scene`` (:func:`generate` moves it from scene to scene)."""
    import habitat.datasets.rearrange as rearrange
    from habitat.datasets.rearrange.run_episode_generator import get_config_defaults
    from omegaconf import OmegaConf

    base = os.path.join(os.path.dirname(rearrange.__file__), "configs", spec.habitat_config)
    config: Any = OmegaConf.merge(get_config_defaults(), OmegaConf.load(base))
    ours = {
        "dataset_path": os.path.join(scene_dir, hab_scene.DATASET_CONFIG),
        "additional_object_paths": [],
        "gpu_device_id": -1,
        "scene_sets": [
            {
                "name": "ours",
                "included_substrings": [hab_scene.SCENE_PREFIX],
                "excluded_substrings": [],
            }
        ],
        "scene_sampler": {"type": "single", "params": {"scene": scene}},
        "object_sets": [
            {"name": "objects", "included_substrings": list(OBJECTS), "excluded_substrings": []}
        ],
        "receptacle_sets": RECEPTACLE_SETS,
        "max_objects_per_receptacle": [],
        "object_target_samplers": [],
        **spec.overrides,
    }
    for key, value in ours.items():
        # Lists replace habitat's (a merge would append to them element-wise).
        if isinstance(value, list):
            config[key] = OmegaConf.create(value)
        else:
            config[key] = OmegaConf.merge(config[key], value) if isinstance(value, dict) else value
    return config


@contextlib.contextmanager
def rigid_receptacles_navigable() -> Iterator[None]:
    """Within the block, habitat-lab's generator can check receptacles on rigid
    objects (tables, the TV stand) for navigability.

    Its ``get_navigable_receptacles`` compares ``parent_link`` with 0, which is
    ``None`` on a rigid object's receptacle (a ``TypeError`` that ends every
    episode with a table receptacle); the branch it means for them is the one
    for ``parent_link < 0``.  The wrapper shows it -1 for the check only.
    """
    from habitat.datasets.rearrange import rearrange_generator

    original = rearrange_generator.get_navigable_receptacles

    def navigable(sim: Any, receptacles: List[Any], *args: Any, **kwargs: Any) -> List[Any]:
        kept = []
        for receptacle in receptacles:
            rigid = receptacle.parent_link is None
            if rigid:
                receptacle.parent_link = -1
            try:
                kept += original(sim, [receptacle], *args, **kwargs)
            finally:
                if rigid:
                    receptacle.parent_link = None
        return kept

    rearrange_generator.get_navigable_receptacles = navigable
    try:
        yield
    finally:
        rearrange_generator.get_navigable_receptacles = original


def _generator_class(shared: Dict[str, Any]) -> Any:
    """habitat-lab's generator class, with one simulator for all its instances.

    ``shared["sim"]`` holds the simulator the first instance makes; the later
    ones take it over, and it stays open when an instance ends (whoever made
    ``shared`` closes it).
    """
    from habitat.datasets.rearrange.rearrange_generator import RearrangeEpisodeGenerator

    class Generator(RearrangeEpisodeGenerator):
        """habitat-lab's generator, changing scenes without reloading every asset,
        and without its debug visualizer unless asked for.

        To change scenes habitat-lab closes the simulator and destroys every
        asset it loaded (ReplicaCAD's objects and furniture, ~25 s on 2 cores
        per change, most of the generator's time); loading the next scene into
        the open simulator, as it does to reload the same scene, keeps them.
        Its target samplers are handed the visualizer even when debug
        visualization is off, and render through it; with no renderer (we
        create none) that aborts the process in habitat-sim's framebuffer check.
        """

        def initialize_sim(self, scene_name: str, dataset_path: str) -> None:
            if self.sim is None:
                self.sim = shared.get("sim")
            if self.sim is not None:
                # habitat-lab's path for the same scene: through an empty one.
                self.sim.config.sim_cfg.scene_id = scene_name
            super().initialize_sim(scene_name, dataset_path)
            shared["sim"] = self.sim
            if not self._render_debug_obs:
                self.dbv = None  # type: ignore[assignment]

        def __exit__(self, *exc: Any) -> None:
            pass  # the simulator is shared: closed by the caller

    return Generator


@contextlib.contextmanager
def shared_simulator() -> Iterator[Dict[str, Any]]:
    """The holder of the generators' one simulator, closed when the block ends."""
    shared: Dict[str, Any] = {}
    try:
        yield shared
    finally:
        if shared.get("sim") is not None:
            shared["sim"].close(destroy=True)


def generate(
    spec: DatasetSpec,
    scene_dir: str,
    scenes: Dict[str, List[str]],
    counts: Dict[str, int],
    log: Any = print,
    shared: Optional[Dict[str, Any]] = None,
) -> Dict[str, str]:
    """The JSON text of ``spec``'s episodes per split: ``counts[split]`` each,
    shared out evenly over ``scenes[split]``, from one habitat-lab generator,
    reseeded per split.

    Args:
        shared: :func:`shared_simulator`'s holder, to use one simulator for
            several files (default: one for this file alone).
    """
    if shared is None:
        with shared_simulator() as own:
            return generate(spec, scene_dir, scenes, counts, log, own)
    from habitat.datasets.rearrange.samplers.scene_sampler import SingleSceneSampler

    first = next(iter(scenes.values()))[0]
    config = generator_config(spec, scene_dir, first)
    total = sum(counts.values())
    texts = {}
    generator = _generator_class(shared)
    with rigid_receptacles_navigable(), generator(cfg=config, num_episodes=total) as gen:
        for split, count in counts.items():
            _seed(SPLIT_SEEDS[split])
            episodes: List[Any] = []
            dropped = 0
            for scene, share in zip(scenes[split], shares(count, len(scenes[split]))):
                # The generator loads the scene its sampler names for every episode.
                gen._scene_sampler = SingleSceneSampler(scene)
                made, lost = _scene_episodes(gen, share)
                episodes += made
                dropped += lost
                if len(made) < share:
                    raise GenerationError(
                        f"habitat-lab's generator made {len(made)} of {share} {spec.name} "
                        f"episodes for {split} on {scene} in {GENERATION_ROUNDS} rounds"
                    )
            log(
                f"{spec.name} {split}: {len(episodes)} of {count} episodes on "
                f"{len(scenes[split])} arrangement(s) ({dropped} dropped)"
            )
            # The data folder the scenes are in.
            texts[split] = _dataset_json(episodes, os.path.dirname(os.path.normpath(scene_dir)))
    return texts


def shares(count: int, parts: int) -> List[int]:
    """``count`` shared out over ``parts`` as evenly as can be, the first ones larger."""
    return [count // parts + (i < count % parts) for i in range(parts)]


def _scene_episodes(gen: Any, count: int) -> Tuple[List[Any], int]:
    """Up to ``count`` episodes on the generator's scene, and how many were dropped."""
    kept: List[Any] = []
    dropped = 0
    for _ in range(GENERATION_ROUNDS):
        made = gen.generate_episodes(count - len(kept))
        good = [episode for episode in made if stale_objects(episode) == []]
        dropped += len(made) - len(good)
        kept += good
        if len(kept) == count:
            break
    return kept, dropped


def _dataset_json(episodes: List[Any], out: str) -> str:
    """The episodes as habitat-lab's rearrange dataset JSON.

    habitat-lab's dataset writes its physics settings to
    ``data/default.physics_config.json`` under the working directory when
    that file is missing, and fails where there is no ``data`` folder; the
    file goes into ``out`` instead (the same file when ``out`` is ``data``).
    """
    import habitat.datasets.utils as habitat_dataset_utils
    from habitat.datasets.rearrange.rearrange_dataset import RearrangeDatasetV0

    default = habitat_dataset_utils.DEFAULT_PHYSICS_CONFIG_PATH
    habitat_dataset_utils.DEFAULT_PHYSICS_CONFIG_PATH = os.path.join(out, os.path.basename(default))
    try:
        dataset = RearrangeDatasetV0()
    finally:
        habitat_dataset_utils.DEFAULT_PHYSICS_CONFIG_PATH = default
    dataset.episodes = episodes
    return dataset.to_json()


def stale_objects(episode: Any) -> List[str]:
    """Objects an episode's ``name_to_receptacle`` names that it does not add.

    habitat-lab's generator removes objects that did not settle
    (``correct_unstable_results``) from ``rigid_objs`` but not from
    ``name_to_receptacle``; ``RearrangeSim`` then fails that episode's reset
    (``Object with handle '...' could not be found in the scene``).  Instance
    handles are the simulator's: the object's config name, ``_:``, and its
    count among the episode's copies of that object (``cup_01_:0001``).
    """
    copies: Dict[str, int] = {}
    added = set()
    for handle, _ in episode.rigid_objs:
        name = handle.split(".object_config.json")[0]
        added.add(f"{name}_:{copies.get(name, 0):04d}")
        copies[name] = copies.get(name, 0) + 1
    return sorted(set(episode.name_to_receptacle) - added)


def _seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)


class NoFloorError(Exception):
    """The scene has too little navigable indoor floor for the robot."""


def write_navmesh(scene_dir: str, scene: str) -> float:
    """Compute a scene's navmesh with the Fetch's settings and save it.

    Returns:
        The area (m^2) of the largest indoor island, the floor habitat-lab's
        tasks spawn the robot on (the roof's top is another island, outdoor).

    Raises:
        NoFloorError: when that floor is under :data:`MIN_FLOOR_AREA`.
    """
    from habitat.datasets.rearrange.navmesh_utils import get_largest_island_index

    import habitat_sim

    backend = habitat_sim.SimulatorConfiguration()
    backend.scene_dataset_config_file = os.path.join(scene_dir, hab_scene.DATASET_CONFIG)
    backend.scene_id = scene
    backend.enable_physics = True
    backend.gpu_device_id = -1
    backend.create_renderer = False
    config = habitat_sim.Configuration(backend, [habitat_sim.agent.AgentConfiguration()])
    with habitat_sim.Simulator(config) as sim:
        settings = habitat_sim.NavMeshSettings()
        settings.set_defaults()
        # habitat-lab's Fetch agent (habitat.simulator.agents.main_agent).
        settings.agent_radius, settings.agent_height = 0.3, 1.5
        settings.agent_max_climb, settings.agent_max_slope = 0.2, 45.0
        settings.include_static_objects = True
        built = sim.recompute_navmesh(sim.pathfinder, settings)
        floor = get_largest_island_index(sim.pathfinder, sim, allow_outdoor=False) if built else -1
        area = float(sim.pathfinder.island_area(floor)) if floor >= 0 else 0.0
        if area < MIN_FLOOR_AREA:
            # No navmesh at all (nothing the Fetch fits on) is the same fault.
            raise NoFloorError(
                f"the scene {scene} in {scene_dir} has {area:.1f} m^2 of navigable indoor "
                f"floor (at least {MIN_FLOOR_AREA} needed): its stage has no floor under a "
                "ceiling the Fetch fits on"
            )
        path = os.path.join(scene_dir, "navmeshes", f"{scene}.navmesh")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        sim.pathfinder.save_nav_mesh(tmp)
        os.replace(tmp, path)
        return area


def arrangements(
    train: int = hab_scene.DEFAULT_TRAIN, val: int = hab_scene.DEFAULT_VAL
) -> Dict[str, List[str]]:
    """The first ``train`` train and ``val`` val arrangements, by split.

    Raises:
        ValueError: a count under 1 or over the arrangements there are.
    """
    chosen = {}
    for split, count, pool in (
        ("train", train, hab_scene.TRAIN_ARRANGEMENTS),
        ("val", val, hab_scene.VAL_ARRANGEMENTS),
    ):
        if not 1 <= count <= len(pool):
            raise ValueError(f"{count} {split} arrangements: between 1 and {len(pool)} can be made")
        chosen[split] = list(pool[:count])
    return chosen


def make(
    assets: str,
    out: str,
    names: Optional[Sequence[str]] = None,
    counts: Optional[Dict[str, int]] = None,
    log: Any = print,
    splits: Optional[Dict[str, List[str]]] = None,
) -> List[str]:
    """Scenes, navmeshes and episodes under ``out``; returns the episode files written.

    Args:
        assets: folder holding ``replica_cad/`` and ``robots/hab_fetch/``.
        out: the data folder written into.
        names: the episode files to make (default: all of :data:`DATASETS`).
        counts: episodes per split for every file, e.g. ``{"train": 4, "val": 2}``
            (default: each file's own).
        splits: the arrangements of each split (default: :func:`arrangements`).
    """
    from habitat_ver.compat.sim_api import bridge_sim_api

    check_assets(assets)
    splits = splits or arrangements()
    specs = [s for s in DATASETS if names is None or s.name in names]
    for spec in specs:
        check_counts(counts or spec.episodes, splits, spec.name)
    link_assets(assets, out)
    scene_dir = os.path.join(out, "hab_ver")
    replica_cad = os.path.join(out, "replica_cad")
    scenes = {split: [hab_scene.scene_name(a) for a in chosen] for split, chosen in splits.items()}
    built = [scene for chosen in scenes.values() for scene in chosen]
    hab_scene.write_dataset_config(scene_dir, replica_cad, built)
    for split, chosen in splits.items():
        for arrangement in chosen:
            plan = hab_scene.plan_from_navmesh(hab_scene.navmesh_path(replica_cad, arrangement))
            furniture = hab_scene.write_scene(scene_dir, replica_cad, arrangement, plan)
            scene = hab_scene.scene_name(arrangement)
            articulated = ", ".join(hab_scene.names(furniture["articulated_object_instances"]))
            pieces = len(furniture["object_instances"])
            area = write_navmesh(scene_dir, scene)
            log(
                f"scene {scene} ({split}): {articulated}, {pieces} pieces of furniture, "
                f"{area:.1f} m^2 of indoor floor"
            )
    bridge_sim_api()
    written = []
    with folder_written_whole(episodes_dir(out)) as tmp, shared_simulator() as shared:
        # The folder is replaced whole: the files not made now (``--only``) are
        # carried into it, those whose scenes are still built.
        for split, name, data in _other_files(episodes_dir(out), specs, built, log):
            write_atomically(
                os.path.join(tmp, split, name), functools.partial(_write_bytes, data=data)
            )
            log(f"kept {split}/{name} (not made now)")
        for spec in specs:
            kept = progress_file(out, spec, splits, counts or spec.episodes)
            texts = _made_before(kept)
            if texts is None:
                texts = generate(spec, scene_dir, scenes, counts or spec.episodes, log, shared)
                packed_texts = gzip.compress(json.dumps(texts).encode())
                write_atomically(kept, functools.partial(_write_bytes, data=packed_texts))
            else:
                log(f"{spec.name}: made by a run stopped before, taken from {kept}")
            for split, text in texts.items():
                packed = gzip.compress(text.encode())
                path = os.path.join(tmp, split, f"{spec.name}.json.gz")
                write_atomically(path, functools.partial(_write_bytes, data=packed))
                written.append(os.path.join(episodes_dir(out), split, f"{spec.name}.json.gz"))
    shutil.rmtree(progress_dir(out), ignore_errors=True)
    # A previous run's other scenes go once no episode names them.
    hab_scene.remove_other_scenes(scene_dir, built)
    return written


def _other_files(
    folder: str, specs: Sequence[DatasetSpec], scenes: Sequence[str], log: Any
) -> List[Tuple[str, str, bytes]]:
    """``(split, file name, bytes)`` of the episode files in ``folder`` that
    ``specs`` do not make and whose episodes are all on ``scenes``; a file on
    another scene is dropped and said (its scene's files are removed)."""
    made = {f"{spec.name}.json.gz" for spec in specs}
    kept = []
    for split in ("train", "val"):
        split_dir = os.path.join(folder, split)
        names = sorted(os.listdir(split_dir)) if os.path.isdir(split_dir) else []
        for name in names:
            if name in made or not name.endswith(".json.gz"):
                continue
            with open(os.path.join(split_dir, name), "rb") as f:
                data = f.read()
            try:
                on = {e["scene_id"] for e in json.loads(gzip.decompress(data))["episodes"]}
            except (OSError, ValueError, KeyError, TypeError) as error:
                log(f"dropped {split}/{name}: unreadable ({error})")
                continue
            if on - set(scenes):
                log(
                    f"dropped {split}/{name}: its episodes are on "
                    f"{', '.join(sorted(on - set(scenes)))}, not made now (remake it with "
                    "these --arrangements)"
                )
                continue
            kept.append((split, name, data))
    return kept


def check_counts(counts: Dict[str, int], splits: Dict[str, List[str]], name: str) -> None:
    """Every arrangement of a split gets at least one episode of every file.

    Raises:
        ValueError: naming the file, the split and both counts.
    """
    for split, chosen in splits.items():
        if counts[split] < len(chosen):
            raise ValueError(
                f"{counts[split]} {split} episodes of {name} for {len(chosen)} {split} "
                f"arrangements: each arrangement needs at least one (raise --episodes or "
                "lower --arrangements)"
            )


def _write_bytes(out: Any, data: bytes) -> None:
    out.write(data)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n")[0])
    parser.add_argument(
        "--assets", default=DEFAULT_ASSETS, help="folder with replica_cad/ and robots/hab_fetch/"
    )
    parser.add_argument(
        "--out", default=DEFAULT_OUT, help="data folder to write into (default: data)"
    )
    parser.add_argument(
        "--only", nargs="*", choices=[s.name for s in DATASETS], help="episode files to make"
    )
    parser.add_argument(
        "--episodes",
        nargs=2,
        type=int,
        metavar=("TRAIN", "VAL"),
        help="episodes per file in the train and val splits, shared out over the split's "
        "arrangements (default: 20/10 per skill file, 10/10 per scenario file)",
    )
    parser.add_argument(
        "--arrangements",
        nargs=2,
        type=int,
        default=(hab_scene.DEFAULT_TRAIN, hab_scene.DEFAULT_VAL),
        metavar=("TRAIN", "VAL"),
        help="how many ReplicaCAD arrangements to furnish for the train and val splits "
        f"(default: {hab_scene.DEFAULT_TRAIN} {hab_scene.DEFAULT_VAL}; at most "
        f"{len(hab_scene.TRAIN_ARRANGEMENTS)} {len(hab_scene.VAL_ARRANGEMENTS)})",
    )
    args = parser.parse_args(argv)
    counts = None if args.episodes is None else dict(zip(("train", "val"), args.episodes))
    if counts is not None and min(counts.values()) < 1:
        parser.error(f"--episodes {args.episodes[0]} {args.episodes[1]}: each must be >= 1")
    try:
        splits = arrangements(*args.arrangements)
        for spec in DATASETS:
            if args.only is None or spec.name in args.only:
                check_counts(counts or spec.episodes, splits, spec.name)
    except ValueError as error:
        parser.error(f"--arrangements {args.arrangements[0]} {args.arrangements[1]}: {error}")
    try:
        check_assets(args.assets)  # before anything is written
        with output_to_log(log_path(args.out), COMMAND) as say:
            files = make(args.assets, args.out, args.only, counts, log=say, splits=splits)
    except (AssetsMissingError, NoFloorError) as error:
        print(f"{COMMAND}: error: {error}", file=sys.stderr)
        return 2
    except GenerationError as error:
        print(f"{COMMAND}: error: {error}; see {log_path(args.out)}", file=sys.stderr)
        return 1
    except Exception as error:
        # Ctrl-C inside a library can come out as another error
        if not raised_by_ctrl_c(error):
            raise
        return interrupted(args.out)
    except KeyboardInterrupt:
        return interrupted(args.out)
    folder = episodes_dir(args.out)
    held = len(glob.glob(os.path.join(glob.escape(folder), "*", "*.json.gz")))
    print(f"{len(files)} episode files written, {held} in all under {folder}")
    return 0


def interrupted(out: str) -> int:
    """Say what a Ctrl-C left and how to go on; the exit status."""
    print(
        f"{COMMAND}: interrupted; {episodes_dir(out)} is as it was, and the episode "
        f"files made so far are kept in {progress_dir(out)}: run the same command "
        "again to go on from them",
        file=sys.stderr,
    )
    return 130


def log_path(out: str) -> str:
    """The log of habitat-lab's and habitat-sim's output during a run."""
    return os.path.join(out, LOG_FILE)


if __name__ == "__main__":
    sys.exit(main())
