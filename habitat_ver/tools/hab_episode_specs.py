"""What each HAB episode file of our apartment holds: habitat-lab's generator
config it starts from, and the objects, receptacles and samplers we put in it.

Used by :mod:`habitat_ver.tools.make_hab_dataset`.  Sampler names are
habitat-lab's where its PDDL problems name the targets (``obj0_target|0``,
``bowl_target|0``).
"""

from dataclasses import dataclass
from typing import Any, Dict, Sequence, Tuple

# ReplicaCAD's small objects (render meshes in the public copy, at most 2 kg):
# what the robot picks and places here instead of HAB's YCB objects.
OBJECTS = (
    "frl_apartment_cup_01",
    "frl_apartment_cup_02",
    "frl_apartment_cup_03",
    "frl_apartment_cup_05",
    "frl_apartment_bowl_03",
    "frl_apartment_bowl_06",
    "frl_apartment_plate_01",
    "frl_apartment_sponge_dish",
    "frl_apartment_remote-control_01",
    "frl_apartment_kitchen_utensil_02",
    "frl_apartment_kitchen_utensil_04",
    "frl_apartment_book_03",
)
# Receptacles of our scene that HAB's configs name (chair, table_02 and the
# TV stand's shelves of the apartments are absent or unreachable here).
SURFACES = (
    "receptacle_aabb_Tbl1_Top1_frl_apartment_table_01",
    "receptacle_aabb_TvStnd1_Top1_frl_apartment_tvstand",
    "receptacle_aabb_sink_kitchen_counter",
    "receptacle_aabb_counter_right_kitchen_counter",
    "receptacle_aabb_counter_left_kitchen_counter",
)
FRIDGE = "receptacle_aabb_middle_topfrl_apartment_refrigerator"
# The drawer Set Table's plan opens (cab_push_point_5, as habitat-lab's config).
DRAWER = "receptacle_aabb_drawer_right_top_frl_apartment_kitchen_counter"
DRAWERS = ("receptacle_aabb_drawer_left_top_frl_apartment_kitchen_counter", DRAWER)


@dataclass(frozen=True)
class DatasetSpec:
    """One episode file: habitat-lab's generator config and what we change in it.

    Attributes:
        name: file name (HAB's ``rearrange_dataset_v2`` name, without ``.json.gz``).
        habitat_config: habitat-lab's generator config it starts from,
            relative to ``habitat/datasets/rearrange/configs``.
        episodes: episodes per split, ``{"train": n, "val": m}``.
        overrides: merged over that config after the scene and object sets.
    """

    name: str
    habitat_config: str
    episodes: Dict[str, int]
    overrides: Dict[str, Any]


def _receptacles(name: str, receptacles: Sequence[str]) -> Dict[str, Any]:
    return {
        "name": name,
        "included_object_substrings": [""],
        "excluded_object_substrings": [],
        "included_receptacle_substrings": list(receptacles),
        "excluded_receptacle_substrings": [],
    }


def _uniform(name: str, receptacles: str, count: Tuple[int, int]) -> Dict[str, Any]:
    return {
        "name": name,
        "type": "uniform",
        "params": {
            "receptacle_sets": [receptacles],
            "num_samples": list(count),
            "orientation_sampling": "up",
        },
    }


def _objects(name: str, receptacles: str, count: Tuple[int, int]) -> Dict[str, Any]:
    sampler = _uniform(name, receptacles, count)
    sampler["params"]["object_sets"] = ["objects"]
    return sampler


def _targets(name: str, objects: str, receptacles: str, count: Tuple[int, int]) -> Dict[str, Any]:
    sampler = _uniform(name, receptacles, count)
    sampler["params"]["object_samplers"] = [objects]
    return sampler


# Receptacle sets the samplers name.
RECEPTACLE_SETS = [
    _receptacles("surfaces", SURFACES),
    _receptacles("fridge", (FRIDGE,)),
    _receptacles("drawers", DRAWERS),
    _receptacles("drawer", (DRAWER,)),
    _receptacles("counter", SURFACES[2:]),
    _receptacles("table", SURFACES[:1]),
]

# Episodes per split: enough for short training and evaluation on 2 cores.
_SKILL = {"train": 20, "val": 10}
_SCENARIO = {"train": 10, "val": 10}

DATASETS = (
    # pick, place, nav_to_obj: objects on surfaces, one of them with a goal.
    DatasetSpec(
        "rearrange_easy",
        "hab/rearrange_easy.yaml",
        _SKILL,
        {
            "object_samplers": [_objects("any_targets", "surfaces", (3, 5))],
            "object_target_samplers": [_targets("goal0", "any_targets", "surfaces", (1, 1))],
        },
    ),
    # open/close fridge: an object in the fridge.
    DatasetSpec(
        "in_fridge_1k_100",
        "in_fridge.yaml",
        _SKILL,
        {"object_samplers": [_objects("kitchen_counter", "fridge", (1, 1))]},
    ),
    # open/close drawer: an object in a drawer.
    DatasetSpec(
        "in_drawer_1k_100",
        "in_drawer.yaml",
        _SKILL,
        {"object_samplers": [_objects("kitchen_counter", "drawers", (1, 1))]},
    ),
    # Tidy House: objects moved between surfaces.
    DatasetSpec(
        "tidy_house_10k_1k",
        "hab/tidy_house.yaml",
        _SCENARIO,
        {
            "object_samplers": [_objects("any_targets", "surfaces", (5, 5))],
            "object_target_samplers": [_targets("any_targets", "any_targets", "surfaces", (5, 5))],
        },
    ),
    # Prepare Groceries: two objects from the fridge to the counter, one back.
    # Sampler names are habitat-lab's: its PDDL problem names the targets
    # (obj0_target|0, ...).
    DatasetSpec(
        "prepare_groceries_10k_1k",
        "hab/prepare_groceries.yaml",
        _SCENARIO,
        {
            "object_samplers": [
                _objects("obj0", "fridge", (1, 1)),
                _objects("obj1", "fridge", (1, 1)),
                _objects("obj2", "counter", (1, 1)),
            ],
            "object_target_samplers": [
                _targets("obj0_target", "obj0", "counter", (1, 1)),
                _targets("obj1_target", "obj1", "counter", (1, 1)),
                _targets("obj2_target", "obj2", "fridge", (1, 1)),
            ],
        },
    ),
    # Set Table: a bowl from the drawer the plan opens and a fruit from the
    # fridge, to the table (habitat-lab's sampler names: bowl_target|0, fruit_target|1).
    DatasetSpec(
        "set_table_10k_1k",
        "hab/set_table.yaml",
        _SCENARIO,
        {
            "object_samplers": [
                _objects("basket", "drawer", (1, 1)),
                _objects("fruit", "fridge", (1, 1)),
            ],
            "object_target_samplers": [
                _targets("bowl_target", "basket", "table", (1, 1)),
                _targets("fruit_target", "fruit", "table", (1, 1)),
            ],
        },
    ),
)
