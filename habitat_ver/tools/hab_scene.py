"""Our HAB apartments: stages of our own furnished from ReplicaCAD's arrangements.

ReplicaCAD's public copy (``../shared/habitat-data/replica_cad``) has the
furniture, its receptacles, the layouts of its arrangements (``apt_*``,
``v3_sc*_staging_*``) and a navmesh of each, but not the apartment stage mesh.
This module writes a scene dataset that needs only what is there, one scene
per arrangement (``hab_ver_<arrangement>``):

- a stage of our own (``stages/<scene>.glb``): floor, outer walls and a
  ceiling over a plan that covers the arrangement's walkable area (its
  ReplicaCAD navmesh, widened to reach the furniture standing at its edge;
  see :func:`plan_from_navmesh`).  The ceiling matters: habitat-lab calls
  navmesh islands without one "outdoor" and spawns the robot elsewhere;
- a scene instance copying that arrangement's furniture wherever ReplicaCAD's
  assets are present and the piece stands inside the plan: the fridge, the
  kitchen counter with its drawers, the cabinet, tables, sofa, chairs, TV stand;
- one scene dataset config listing every scene, reading the objects and
  articulated objects from ReplicaCAD itself (relative paths: nothing is copied).

Layout of the folder written (``<scene_dir>``, e.g. ``data/hab_ver``)::

    hab_ver.scene_dataset_config.json
    stages/<scene>.glb, stages/<scene>.stage_config.json
    scenes/<scene>.scene_instance.json
    navmeshes/<scene>.navmesh          (written by make_hab_dataset)
"""

import json
import math
import os
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterable, List, Sequence, Tuple

from habitat_ver.common.atomic import write_atomically
from habitat_ver.tools.glb import Box, glb_bytes

SCENE_PREFIX = "hab_ver_"
DATASET_CONFIG = "hab_ver.scene_dataset_config.json"

# HAB's own split of ReplicaCAD's arrangements (habitat-lab's generator
# configs): v3_sc0-2 staging train, v3_sc3 staging val.  Ours take the first
# ones of each, the train ones alternating between sc0, sc1 and sc2.
TRAIN_ARRANGEMENTS = tuple(f"v3_sc{sc}_staging_{i:02d}" for i in range(21) for sc in (0, 1, 2))
VAL_ARRANGEMENTS = tuple(f"v3_sc3_staging_{i:02d}" for i in range(21))
# Default counts: 8 train; 4 val, one per env of the hab/* configs (4 envs).
DEFAULT_TRAIN, DEFAULT_VAL = 8, 4

FLOOR_Y = 0.0
CEILING_Y = 2.7
WALL = 0.1  # wall and slab thickness
# Plan grid: cell size, and how far the walkable area is widened to take in
# the furniture at its edge: the navmesh stops ~0.3 m in front of it and a
# fridge is ~0.8 m deep; a wall closer than that touches it, and habitat-lab's
# generator then refuses every episode (the piece "failed contact test").
CELL = 0.25
REACH = 1.5

_STATIC = "STATIC"


def scene_name(arrangement: str) -> str:
    """Our scene's name for a ReplicaCAD arrangement."""
    return f"{SCENE_PREFIX}{arrangement}"


@dataclass(frozen=True)
class Plan:
    """The floor of a scene: square cells of a grid in habitat's x/z plane.

    Attributes:
        origin: ``(x, z)`` of the low corner of cell ``(0, 0)``.
        cell: the cells' side (m).
        cells: ``(i, j)`` of the cells inside, ``i`` along x, ``j`` along z.
    """

    origin: Tuple[float, float]
    cell: float
    cells: FrozenSet[Tuple[int, int]]

    def _index(self, x: float, z: float) -> Tuple[int, int]:
        return (
            math.floor((x - self.origin[0]) / self.cell),
            math.floor((z - self.origin[1]) / self.cell),
        )

    def inside(self, x: float, z: float, margin: float = 0.05) -> bool:
        """True if ``(x, z)`` and the points ``margin`` around it are on the floor."""
        return all(
            self._index(x + dx, z + dz) in self.cells
            for dx in (-margin, margin)
            for dz in (-margin, margin)
        )

    @property
    def area(self) -> float:
        return len(self.cells) * self.cell**2

    def _x(self, i: int) -> float:
        return self.origin[0] + i * self.cell

    def _z(self, j: int) -> float:
        return self.origin[1] + j * self.cell

    def rows(self) -> List[Tuple[float, float, float, float]]:
        """The floor as rectangles ``(x0, z0, x1, z1)``: runs of cells along x, per row."""
        return [
            (self._x(i0), self._z(j), self._x(i1 + 1), self._z(j + 1))
            for j, i0, i1 in _runs((j, i) for i, j in self.cells)
        ]

    def walls(self) -> List[Tuple[float, float, float, float]]:
        """Wall rectangles ``(x0, z0, x1, z1)`` outside every edge of the floor
        that borders no floor, ``WALL`` thick, overlapping at the corners."""
        w = WALL
        walls = []
        for dj in (-1, 1):  # edges along x, below and above a row
            edge = {(j, i) for i, j in self.cells if (i, j + dj) not in self.cells}
            for j, i0, i1 in _runs(edge):
                z = self._z(j + 1) if dj > 0 else self._z(j) - w
                walls.append((self._x(i0) - w, z, self._x(i1 + 1) + w, z + w))
        for di in (-1, 1):  # edges along z, left and right of a column
            edge = {(i, j) for i, j in self.cells if (i + di, j) not in self.cells}
            for i, j0, j1 in _runs(edge):
                x = self._x(i + 1) if di > 0 else self._x(i) - w
                walls.append((x, self._z(j0) - w, x + w, self._z(j1 + 1) + w))
        return walls


def _runs(keyed: Iterable[Tuple[int, int]]) -> List[Tuple[int, int, int]]:
    """``(key, first, last)`` of every run of consecutive values per key."""
    runs: List[Tuple[int, int, int]] = []
    for key, value in sorted(keyed):
        if runs and runs[-1][0] == key and runs[-1][2] == value - 1:
            runs[-1] = (key, runs[-1][1], value)
        else:
            runs.append((key, value, value))
    return runs


def plan_from_walkable(
    walkable: Sequence[Sequence[bool]], origin: Tuple[float, float], cell: float, reach: float
) -> Plan:
    """The plan covering a walkable grid (rows along z, columns along x).

    The walkable cells are widened by ``reach``, also beyond the grid (to the
    furniture that stands at their edge, and the walls behind it), the holes
    (furniture inside) filled, and the largest connected part kept.
    """
    k = int(math.ceil(reach / cell - 1e-9))
    seeds = [(i, j) for j, row in enumerate(walkable) for i, free in enumerate(row) if free]
    grown = {
        (i + di, j + dj) for i, j in seeds for di in range(-k, k + 1) for dj in range(-k, k + 1)
    }
    if not grown:
        return Plan(origin, cell, frozenset())
    low_i, low_j = min(i for i, _ in grown) - 1, min(j for _, j in grown) - 1
    high_i, high_j = max(i for i, _ in grown) + 1, max(j for _, j in grown) + 1
    # Holes: cells not reached from the border without crossing the floor.
    outside = set()
    frontier = [(low_i, low_j)]
    while frontier:
        i, j = frontier.pop()
        if (
            (i, j) in outside
            or (i, j) in grown
            or not (low_i <= i <= high_i and low_j <= j <= high_j)
        ):
            continue
        outside.add((i, j))
        frontier += [(i + 1, j), (i - 1, j), (i, j + 1), (i, j - 1)]
    filled = {
        (i, j)
        for i in range(low_i, high_i + 1)
        for j in range(low_j, high_j + 1)
        if (i, j) not in outside
    }
    return Plan(origin, cell, frozenset(_largest_part(filled)))


def _largest_part(cells: set) -> set:
    best: set = set()
    left = set(cells)
    while left:
        part = set()
        frontier = [left.pop()]
        while frontier:
            i, j = frontier.pop()
            part.add((i, j))
            for n in ((i + 1, j), (i - 1, j), (i, j + 1), (i, j - 1)):
                if n in left:
                    left.remove(n)
                    frontier.append(n)
        if len(part) > len(best):
            best = part
    return best


def plan_from_navmesh(path: str, cell: float = CELL, reach: float = REACH) -> Plan:
    """The plan of an arrangement from its ReplicaCAD navmesh (the floor slice)."""
    import habitat_sim

    pathfinder = habitat_sim.nav.PathFinder()
    if not pathfinder.load_nav_mesh(path):
        raise ValueError(f"{path}: not a navmesh habitat-sim can load")
    low = pathfinder.get_bounds()[0]
    walkable = pathfinder.get_topdown_view(cell, FLOOR_Y)
    return plan_from_walkable(walkable.tolist(), (float(low[0]), float(low[2])), cell, reach)


def stage_boxes(plan: Plan) -> List[Box]:
    """Floor slabs, ceiling slabs and walls of ``plan``."""
    boxes: List[Box] = []
    for x0, z0, x1, z1 in plan.rows():
        boxes.append(((x0, FLOOR_Y - WALL, z0), (x1, FLOOR_Y, z1)))
        boxes.append(((x0, CEILING_Y, z0), (x1, CEILING_Y + WALL, z1)))
    for x0, z0, x1, z1 in plan.walls():
        boxes.append(((x0, FLOOR_Y - WALL, z0), (x1, CEILING_Y + WALL, z1)))
    return boxes


def layout_path(replica_cad: str, arrangement: str) -> str:
    return os.path.join(replica_cad, "configs", "scenes", f"{arrangement}.scene_instance.json")


def navmesh_path(replica_cad: str, arrangement: str) -> str:
    return os.path.join(replica_cad, "navmeshes", f"{arrangement}.navmesh")


def furnish(replica_cad: str, arrangement: str, plan: Plan) -> Dict[str, List[Dict[str, Any]]]:
    """The arrangement's furniture that exists in ``replica_cad`` and stands in ``plan``.

    Returns:
        ``object_instances`` and ``articulated_object_instances`` in
        habitat-sim's scene-instance format, every piece static (fixed base).
    """
    with open(layout_path(replica_cad, arrangement)) as f:
        layout = json.load(f)
    objects = []
    for instance in layout.get("object_instances", []):
        name = instance["template_name"].split("/")[-1]
        if _object_assets_exist(replica_cad, name) and plan.inside(
            instance["translation"][0], instance["translation"][2]
        ):
            objects.append(dict(instance, template_name=name, motion_type=_STATIC))
    articulated = []
    for instance in layout.get("articulated_object_instances", []):
        name = instance["template_name"]
        urdf = os.path.join(replica_cad, "urdf", name, f"{name}.urdf")
        if os.path.exists(urdf) and plan.inside(
            instance["translation"][0], instance["translation"][2]
        ):
            articulated.append(dict(instance, fixed_base=True))
    return {"object_instances": objects, "articulated_object_instances": articulated}


def _object_assets_exist(replica_cad: str, name: str) -> bool:
    """True if the object's config and every file it names are present."""
    config = os.path.join(replica_cad, "configs", "objects", f"{name}.object_config.json")
    if not os.path.exists(config):
        return False
    with open(config) as f:
        attributes = json.load(f)
    folder = os.path.dirname(config)
    return all(
        os.path.exists(os.path.join(folder, attributes[key]))
        for key in ("render_asset", "collision_asset")
        if key in attributes
    )


def scene_dataset_config(replica_cad_rel: str, scenes: Sequence[str]) -> Dict[str, Any]:
    """Our scene dataset config listing ``scenes``; ``replica_cad_rel`` is
    ReplicaCAD's folder relative to the scene folder."""
    rc = replica_cad_rel.rstrip("/")
    return {
        "stages": {"paths": {".json": ["stages"]}},
        "objects": {"paths": {".json": [f"{rc}/configs/objects"]}},
        "articulated_objects": {"paths": {".urdf": [f"{rc}/urdf/*/"]}},
        "light_setups": {"paths": {".json": [f"{rc}/configs/lighting"]}},
        "scene_instances": {"paths": {".json": ["scenes"]}},
        "navmesh_instances": {scene: f"navmeshes/{scene}.navmesh" for scene in scenes},
    }


def stage_config(scene: str) -> Dict[str, Any]:
    """The stage's attributes (its mesh doubles as the collision mesh)."""
    return {
        "render_asset": f"{scene}.glb",
        "up": [0, 1, 0],
        "front": [0, 0, -1],
        "requires_lighting": True,
        "margin": 0.01,
        "friction_coefficient": 0.8,
        "restitution_coefficient": 0.0,
    }


def scene_instance(scene: str, furniture: Dict[str, List[Dict[str, Any]]]) -> Dict[str, Any]:
    """The scene instance: our stage, the furniture, the navmesh."""
    return {
        "stage_instance": {"template_name": scene},
        "default_lighting": "lighting/frl_apartment_stage",
        "navmesh_instance": scene,
        **furniture,
    }


def write_scene(
    scene_dir: str, replica_cad: str, arrangement: str, plan: Plan
) -> Dict[str, List[Dict[str, Any]]]:
    """Write one arrangement's stage, stage config and scene instance under ``scene_dir``.

    Returns:
        The furniture placed (as in the scene instance).
    """
    scene = scene_name(arrangement)
    furniture = furnish(replica_cad, arrangement, plan)
    stages = os.path.join(scene_dir, "stages")
    mesh = glb_bytes(stage_boxes(plan))
    write_atomically(os.path.join(stages, f"{scene}.glb"), lambda f: f.write(mesh))
    _write_json(os.path.join(stages, f"{scene}.stage_config.json"), stage_config(scene))
    _write_json(
        os.path.join(scene_dir, "scenes", f"{scene}.scene_instance.json"),
        scene_instance(scene, furniture),
    )
    return furniture


def write_dataset_config(scene_dir: str, replica_cad: str, scenes: Sequence[str]) -> None:
    """Write the scene dataset config listing ``scenes``."""
    rel = os.path.relpath(os.path.abspath(replica_cad), os.path.abspath(scene_dir))
    _write_json(os.path.join(scene_dir, DATASET_CONFIG), scene_dataset_config(rel, scenes))


def remove_other_scenes(scene_dir: str, scenes: Sequence[str]) -> List[str]:
    """Delete the files of scenes not in ``scenes`` (a previous run's); returns them."""
    removed = []
    for sub, suffixes in (
        ("stages", (".glb", ".stage_config.json")),
        ("scenes", (".scene_instance.json",)),
        ("navmeshes", (".navmesh",)),
    ):
        folder = os.path.join(scene_dir, sub)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            stem = next((name[: -len(s)] for s in suffixes if name.endswith(s)), None)
            if stem is not None and stem not in scenes:
                os.remove(os.path.join(folder, name))
                removed.append(os.path.join(sub, name))
    return removed


def _write_json(path: str, content: Any) -> None:
    text = json.dumps(content, indent=2).encode()
    write_atomically(path, lambda f: f.write(text))


def names(instances: Sequence[Dict[str, Any]]) -> List[str]:
    """Template names of scene-instance entries (for messages and docs)."""
    return [i["template_name"] for i in instances]
