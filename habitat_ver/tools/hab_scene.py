"""Our HAB apartment: a stage of our own furnished from ReplicaCAD.

ReplicaCAD's public copy (``../shared/habitat-data/replica_cad``) has the
furniture, its receptacles and the apartments' layouts, but not the apartment
stage meshes.  This module writes a scene dataset that needs only what is
there:

- a stage of our own (``stages/hab_ver_apartment.glb``): floor, outer walls,
  a kitchen divider and a ceiling over an L-shaped plan that follows the walkable
  area of ReplicaCAD's ``v3_sc0_staging_00`` (the ceiling matters: habitat-lab
  calls navmesh islands without one "outdoor" and spawns the robot elsewhere);
- a scene instance copying that layout's furniture wherever ReplicaCAD's
  assets are present and the piece stands inside our plan: the fridge, the
  kitchen counter with its drawers, the cabinet, tables, sofa, chairs, TV stand;
- a scene dataset config that reads the objects and articulated objects from
  ReplicaCAD itself (through relative paths, so nothing is copied).

Layout of the folder written (``<scene_dir>``, e.g. ``data/hab_ver``)::

    hab_ver.scene_dataset_config.json
    stages/hab_ver_apartment.glb, stages/hab_ver_apartment.stage_config.json
    scenes/hab_ver_apartment.scene_instance.json
    navmeshes/hab_ver_apartment.navmesh          (written by make_hab_dataset)
"""

import json
import os
from typing import Any, Dict, List, Sequence, Tuple

from habitat_ver.common.atomic import write_atomically
from habitat_ver.tools.glb import Box, glb_bytes

SCENE_NAME = "hab_ver_apartment"
DATASET_CONFIG = "hab_ver.scene_dataset_config.json"
# The ReplicaCAD layout we furnish after (an apartment of HAB's train scenes).
SOURCE_LAYOUT = "v3_sc0_staging_00"

# Plan (metres, habitat's y-up frame, same x/z as the source layout): a living
# room and a kitchen opening onto it.  Rectangles as (x_min, z_min, x_max, z_max).
ROOMS = ((-2.6, -1.2, 4.5, 3.0), (0.0, 3.0, 4.5, 8.3))
# A divider between kitchen and living room, leaving a 2.3 m opening.
DIVIDERS = ((1.2, 2.95, 2.2, 3.05),)
FLOOR_Y = 0.0
CEILING_Y = 2.7
WALL = 0.1  # wall and slab thickness

# Furniture of the source layout that our plan has no room for or whose
# assets the public copy lacks is left out (see docs/HAB.md).
_STATIC = "STATIC"


def stage_boxes() -> List[Box]:
    """Floor slabs, ceiling slabs, outer walls and dividers of :data:`ROOMS`."""
    boxes: List[Box] = []
    for x0, z0, x1, z1 in ROOMS:
        boxes.append(((x0 - WALL, FLOOR_Y - WALL, z0 - WALL), (x1 + WALL, FLOOR_Y, z1 + WALL)))
        boxes.append(((x0 - WALL, CEILING_Y, z0 - WALL), (x1 + WALL, CEILING_Y + WALL, z1 + WALL)))
    for x0, z0, x1, z1 in _outer_walls():
        boxes.append(((x0, FLOOR_Y, z0), (x1, CEILING_Y, z1)))
    for x0, z0, x1, z1 in DIVIDERS:
        boxes.append(((x0, FLOOR_Y, z0), (x1, CEILING_Y, z1)))
    return boxes


def _outer_walls() -> List[Tuple[float, float, float, float]]:
    """Wall rectangles along the outline of the two rooms (x0, z0, x1, z1)."""
    (lx0, lz0, lx1, lz1), (kx0, _, kx1, kz1) = ROOMS
    w = WALL
    return [
        (lx0 - w, lz0 - w, lx1 + w, lz0),  # living room, far wall
        (lx0 - w, lz0, lx0, lz1 + w),  # living room, left wall
        (lx0 - w, lz1, kx0, lz1 + w),  # living room wall beside the kitchen
        (lx1, lz0, lx1 + w, kz1 + w),  # right wall, both rooms
        (kx0 - w, lz1, kx0, kz1 + w),  # kitchen wall behind fridge and counter
        (kx0 - w, kz1, kx1 + w, kz1 + w),  # kitchen end wall
    ]


def inside_plan(x: float, z: float, margin: float = 0.05) -> bool:
    """True if ``(x, z)`` lies inside one of :data:`ROOMS`, ``margin`` from its walls."""
    return any(
        x0 + margin <= x <= x1 - margin and z0 + margin <= z <= z1 - margin
        for x0, z0, x1, z1 in ROOMS
    )


def furnish(replica_cad: str) -> Dict[str, List[Dict[str, Any]]]:
    """The source layout's furniture that exists in ``replica_cad`` and fits our plan.

    Returns:
        ``object_instances`` and ``articulated_object_instances`` in
        habitat-sim's scene-instance format, every piece static (fixed base).
    """
    path = os.path.join(replica_cad, "configs", "scenes", f"{SOURCE_LAYOUT}.scene_instance.json")
    with open(path) as f:
        layout = json.load(f)
    objects = []
    for instance in layout.get("object_instances", []):
        name = instance["template_name"].split("/")[-1]
        if _object_assets_exist(replica_cad, name) and inside_plan(
            instance["translation"][0], instance["translation"][2]
        ):
            objects.append(dict(instance, template_name=name, motion_type=_STATIC))
    articulated = []
    for instance in layout.get("articulated_object_instances", []):
        name = instance["template_name"]
        urdf = os.path.join(replica_cad, "urdf", name, f"{name}.urdf")
        if os.path.exists(urdf) and inside_plan(
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


def scene_dataset_config(replica_cad_rel: str) -> Dict[str, Any]:
    """Our scene dataset config; ``replica_cad_rel`` is ReplicaCAD's folder
    relative to the scene folder."""
    rc = replica_cad_rel.rstrip("/")
    return {
        "stages": {"paths": {".json": ["stages"]}},
        "objects": {"paths": {".json": [f"{rc}/configs/objects"]}},
        "articulated_objects": {"paths": {".urdf": [f"{rc}/urdf/*/"]}},
        "light_setups": {"paths": {".json": [f"{rc}/configs/lighting"]}},
        "scene_instances": {"paths": {".json": ["scenes"]}},
        "navmesh_instances": {SCENE_NAME: f"navmeshes/{SCENE_NAME}.navmesh"},
    }


def stage_config() -> Dict[str, Any]:
    """The stage's attributes (its mesh doubles as the collision mesh)."""
    return {
        "render_asset": f"{SCENE_NAME}.glb",
        "up": [0, 1, 0],
        "front": [0, 0, -1],
        "requires_lighting": True,
        "margin": 0.01,
        "friction_coefficient": 0.8,
        "restitution_coefficient": 0.0,
    }


def scene_instance(furniture: Dict[str, List[Dict[str, Any]]]) -> Dict[str, Any]:
    """The scene instance: our stage, the furniture, the navmesh."""
    return {
        "stage_instance": {"template_name": SCENE_NAME},
        "default_lighting": "lighting/frl_apartment_stage",
        "navmesh_instance": SCENE_NAME,
        **furniture,
    }


def write_scene(scene_dir: str, replica_cad: str) -> Dict[str, List[Dict[str, Any]]]:
    """Write stage, stage config, scene instance and dataset config under ``scene_dir``.

    Returns:
        The furniture placed (as in the scene instance).
    """
    furniture = furnish(replica_cad)
    rel = os.path.relpath(os.path.abspath(replica_cad), os.path.abspath(scene_dir))
    _write_json(os.path.join(scene_dir, DATASET_CONFIG), scene_dataset_config(rel))
    stages = os.path.join(scene_dir, "stages")
    write_atomically(
        os.path.join(stages, f"{SCENE_NAME}.glb"), lambda f: f.write(glb_bytes(stage_boxes()))
    )
    _write_json(os.path.join(stages, f"{SCENE_NAME}.stage_config.json"), stage_config())
    _write_json(
        os.path.join(scene_dir, "scenes", f"{SCENE_NAME}.scene_instance.json"),
        scene_instance(furniture),
    )
    return furniture


def _write_json(path: str, content: Any) -> None:
    text = json.dumps(content, indent=2).encode()
    write_atomically(path, lambda f: f.write(text))


def names(instances: Sequence[Dict[str, Any]]) -> List[str]:
    """Template names of scene-instance entries (for messages and docs)."""
    return [i["template_name"] for i in instances]
