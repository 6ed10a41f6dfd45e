"""Our HAB apartment's files, checked without a simulator: the stage mesh, the
furniture chosen from a layout, the generator config and the dataset guards.
(tests/hab/test_hab_real.py loads them into habitat-sim.)"""

import gzip
import json
import struct
import types

import numpy as np
import pytest

from habitat_ver.common.atomic import folder_written_whole
from habitat_ver.tools import glb, hab_scene
from habitat_ver.tools import make_hab_dataset as tool


def test_a_box_has_six_outward_faces_of_two_triangles():
    positions, normals, indices = glb.box_mesh([((0, 0, 0), (1, 2, 3))])
    # 6 faces x 4 corners, 6 faces x 2 triangles x 3 indices.
    assert positions.shape == (24, 3) and normals.shape == (24, 3) and indices.shape == (36,)
    assert positions.min(axis=0).tolist() == [0, 0, 0]
    assert positions.max(axis=0).tolist() == [1, 2, 3]
    centre = np.array([0.5, 1.0, 1.5])
    for a, b, c in indices.reshape(-1, 3):
        winding = np.cross(positions[b] - positions[a], positions[c] - positions[a])
        # Counter-clockwise seen from outside: the winding's normal is the
        # face's normal and points away from the box's centre.
        assert np.allclose(winding / np.linalg.norm(winding), normals[a])
        assert np.dot(normals[a], positions[a] - centre) > 0


def test_a_box_with_no_volume_is_refused():
    with pytest.raises(ValueError, match=r"max > min on every axis, got \[0.0, 0.0, 0.0\]"):
        glb.box_mesh([((0, 0, 0), (1, 0, 1))])


def test_the_glb_file_holds_the_mesh_it_was_given():
    boxes = [((0, 0, 0), (1, 1, 1)), ((2, 0, 0), (3, 1, 4))]
    data = glb.glb_bytes(boxes)
    magic, version, length = struct.unpack("<III", data[:12])
    assert (magic, version, length) == (0x46546C67, 2, len(data))
    json_length, json_type = struct.unpack("<II", data[12:20])
    assert json_type == 0x4E4F534A and json_length % 4 == 0
    document = json.loads(data[20 : 20 + json_length])
    position, _, index = document["accessors"]
    assert position["count"] == 48 and index["count"] == 72
    assert position["min"] == [0, 0, 0] and position["max"] == [3, 1, 4]
    bin_length, bin_type = struct.unpack("<II", data[20 + json_length : 28 + json_length])
    assert bin_type == 0x004E4942
    # positions and normals (48 x 3 float32 each) and 72 uint32 indices
    assert bin_length == 48 * 12 * 2 + 72 * 4 == document["buffers"][0]["byteLength"]


# An L of cells: a 4 x 2 room and a 2 x 2 one above its right half.
L_CELLS = frozenset([(i, j) for i in range(4) for j in range(2)] + [(2, 2), (3, 2), (2, 3), (3, 3)])
L_PLAN = hab_scene.Plan((0.0, 0.0), 1.0, L_CELLS)


def test_the_stage_has_floor_ceiling_and_walls_around_the_plan():
    boxes = hab_scene.stage_boxes(L_PLAN)
    floors = [b for b in boxes if b[1][1] == hab_scene.FLOOR_Y]
    ceilings = [b for b in boxes if b[0][1] == hab_scene.CEILING_Y]
    # One slab per row run: rows 0 and 1 are x 0..4, rows 2 and 3 x 2..4.
    assert sorted((b[0][0], b[0][2], b[1][0], b[1][2]) for b in floors) == [
        (0.0, 0.0, 4.0, 1.0),
        (0.0, 1.0, 4.0, 2.0),
        (2.0, 2.0, 4.0, 3.0),
        (2.0, 3.0, 4.0, 4.0),
    ]
    assert len(ceilings) == len(floors)
    walls = [b for b in boxes if b not in floors and b not in ceilings]
    assert len(walls) == 6  # an L has six sides
    assert all(b[0][1] < hab_scene.FLOOR_Y and b[1][1] > hab_scene.CEILING_Y for b in walls)

    # Every point just outside the floor's edge is in a wall, none inside it.
    def in_wall(x, z):
        return any(b[0][0] <= x <= b[1][0] and b[0][2] <= z <= b[1][2] for b in walls)

    w = hab_scene.WALL / 2
    for x, z in ((-w, 1.5), (2.5, 4 + w), (1.5, 2 + w), (2 - w, 3.0), (4 + w, 0.5), (0.5, -w)):
        assert in_wall(x, z), (x, z)
    assert not in_wall(1.0, 1.0) and not in_wall(3.0, 3.0)
    assert L_PLAN.inside(1.0, 1.0) and L_PLAN.inside(3.0, 3.5) and L_PLAN.area == 12.0
    # The corner of the L left out, and beyond its walls.
    assert not L_PLAN.inside(1.0, 3.0) and not L_PLAN.inside(5.0, 1.0)
    assert not L_PLAN.inside(3.98, 1.0)  # within the margin of a wall


def test_the_plan_widens_the_walkable_area_fills_its_holes_and_keeps_its_largest_part():
    walkable = [[False] * 10 for _ in range(8)]
    for j in (2, 3, 4):  # a ring of walkable cells around a table at (4, 3)
        for i in (3, 4, 5):
            walkable[j][i] = (i, j) != (4, 3)
    walkable[7][9] = True  # a speck far away, apart once widened
    plan = hab_scene.plan_from_walkable(walkable, (-1.0, 2.0), 0.5, 0.5)
    assert plan.origin == (-1.0, 2.0) and plan.cell == 0.5
    # Widened by one cell (0.5 m): columns 2-6, rows 1-5, the hole filled.
    assert plan.cells == frozenset((i, j) for i in range(2, 7) for j in range(1, 6))
    assert (4, 3) in plan.cells and (9, 7) not in plan.cells


def test_train_and_val_arrangements_are_hab_s_disjoint_splits():
    train, val = hab_scene.TRAIN_ARRANGEMENTS, hab_scene.VAL_ARRANGEMENTS
    assert not set(train) & set(val)
    assert all(a.startswith(("v3_sc0_", "v3_sc1_", "v3_sc2_")) for a in train)
    assert all(a.startswith("v3_sc3_") for a in val)
    chosen = tool.arrangements()
    assert len(chosen["train"]) == hab_scene.DEFAULT_TRAIN >= 8
    assert len(chosen["val"]) == hab_scene.DEFAULT_VAL >= 3
    assert chosen["train"][:3] == ["v3_sc0_staging_00", "v3_sc1_staging_00", "v3_sc2_staging_00"]
    assert tool.arrangements(1, 2) == {
        "train": ["v3_sc0_staging_00"],
        "val": ["v3_sc3_staging_00", "v3_sc3_staging_01"],
    }
    with pytest.raises(ValueError, match=r"^0 train arrangements: between 1 and 63 can be made$"):
        tool.arrangements(0, 1)
    with pytest.raises(ValueError, match=r"^22 val arrangements: between 1 and 21 can be made$"):
        tool.arrangements(1, 22)


def test_episodes_are_shared_out_evenly_and_every_arrangement_gets_some():
    assert tool.shares(10, 4) == [3, 3, 2, 2] and tool.shares(3, 3) == [1, 1, 1]
    assert sum(tool.shares(20, 8)) == 20
    splits = tool.arrangements(2, 3)
    tool.check_counts({"train": 2, "val": 3}, splits, "pick")
    with pytest.raises(ValueError, match=r"^2 val episodes of pick for 3 val arrangements: "):
        tool.check_counts({"train": 2, "val": 2}, splits, "pick")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--arrangements", "0", "1"], "--arrangements 0 1: 0 train arrangements: between 1"),
        (["--arrangements", "2", "4", "--episodes", "3", "3"], "3 val episodes of"),
    ],
)
def test_bad_arrangement_counts_are_one_usage_error(args, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as raised:
        tool.main(["--assets", str(tmp_path), "--out", str(tmp_path / "data"), *args])
    assert raised.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"{tool.COMMAND}: error: ") and message in err[-1]
    assert not (tmp_path / "data").exists()


def _object(folder, name, receptacle=False, mesh=True):
    config = {"render_asset": f"../../objects/{name}.glb"}
    if receptacle:
        config["user_defined"] = {f"receptacle_aabb_{name}": {"parent_object": name}}
    (folder / "configs" / "objects" / f"{name}.object_config.json").write_text(json.dumps(config))
    if mesh:
        (folder / "objects" / f"{name}.glb").write_bytes(b"mesh")


@pytest.fixture
def replica_cad(tmp_path):
    """A ReplicaCAD folder with a layout naming present, absent and outside pieces."""
    root = tmp_path / "replica_cad"
    for sub in ("configs/objects", "configs/scenes", "objects", "urdf/fridge"):
        (root / sub).mkdir(parents=True)
    (root / "urdf" / "fridge" / "fridge.urdf").write_text("<robot/>")
    _object(root, "table", receptacle=True)
    _object(root, "far_table")
    _object(root, "big_table", mesh=False)  # mesh left out of the copy
    layout = {
        "object_instances": [
            {
                "template_name": "objects/table",
                "translation": [1, 0.5, 1],
                "motion_type": "DYNAMIC",
            },
            {"template_name": "objects/far_table", "translation": [9, 0.5, 9]},
            {"template_name": "objects/big_table", "translation": [1, 0.5, 2]},
        ],
        "articulated_object_instances": [
            {"template_name": "fridge", "translation": [0.5, 1, 4.5]},
            {"template_name": "chestOfDrawers_01", "translation": [1, 0, 1]},
        ],
    }
    path = root / "configs" / "scenes" / f"{ARRANGEMENT}.scene_instance.json"
    path.write_text(json.dumps(layout))
    return root


ARRANGEMENT = "v3_sc0_staging_00"
# A plan of 0..2 x 0..5 m: the far table (9, 9) stands outside it.
PLAN = hab_scene.Plan((0.0, 0.0), 1.0, frozenset((i, j) for i in range(2) for j in range(5)))


def test_furniture_is_kept_where_its_assets_exist_and_it_fits_the_plan(replica_cad):
    furniture = hab_scene.furnish(str(replica_cad), ARRANGEMENT, PLAN)
    assert hab_scene.names(furniture["object_instances"]) == ["table"]
    assert furniture["object_instances"][0]["motion_type"] == "STATIC"
    assert hab_scene.names(furniture["articulated_object_instances"]) == ["fridge"]
    assert furniture["articulated_object_instances"][0]["fixed_base"] is True


def test_the_scene_files_point_into_replica_cad(replica_cad, tmp_path):
    scene_dir = tmp_path / "data" / "hab_ver"
    scene = hab_scene.scene_name(ARRANGEMENT)
    other = hab_scene.scene_name("v3_sc3_staging_00")
    hab_scene.write_scene(str(scene_dir), str(replica_cad), ARRANGEMENT, PLAN)
    hab_scene.write_dataset_config(str(scene_dir), str(replica_cad), [scene, other])
    dataset = json.loads((scene_dir / hab_scene.DATASET_CONFIG).read_text())
    objects = dataset["objects"]["paths"][".json"][0]
    assert (scene_dir / objects).resolve() == (replica_cad / "configs" / "objects").resolve()
    assert sorted(dataset["navmesh_instances"]) == sorted([scene, other])
    instance = json.loads((scene_dir / "scenes" / f"{scene}.scene_instance.json").read_text())
    assert instance["stage_instance"]["template_name"] == scene
    assert instance["navmesh_instance"] == scene
    assert dataset["navmesh_instances"][scene] == f"navmeshes/{scene}.navmesh"
    stage = scene_dir / "stages" / f"{scene}.glb"
    assert stage.read_bytes() == glb.glb_bytes(hab_scene.stage_boxes(PLAN))


def test_an_earlier_run_s_other_scenes_are_removed(replica_cad, tmp_path):
    scene_dir = tmp_path / "hab_ver"
    layouts = replica_cad / "configs" / "scenes"
    (layouts / "v3_sc0_staging_01.scene_instance.json").write_text(
        (layouts / f"{ARRANGEMENT}.scene_instance.json").read_text()
    )
    for arrangement in (ARRANGEMENT, "v3_sc0_staging_01"):
        hab_scene.write_scene(str(scene_dir), str(replica_cad), arrangement, PLAN)
    (scene_dir / "navmeshes").mkdir()
    (scene_dir / "navmeshes" / "hab_ver_v3_sc0_staging_01.navmesh").write_bytes(b"n")
    keep = [hab_scene.scene_name(ARRANGEMENT)]
    removed = hab_scene.remove_other_scenes(str(scene_dir), keep)
    assert removed == [
        "stages/hab_ver_v3_sc0_staging_01.glb",
        "stages/hab_ver_v3_sc0_staging_01.stage_config.json",
        "scenes/hab_ver_v3_sc0_staging_01.scene_instance.json",
        "navmeshes/hab_ver_v3_sc0_staging_01.navmesh",
    ]
    left = sorted(p.name for p in scene_dir.rglob("*") if p.is_file())
    assert left == [
        "hab_ver_v3_sc0_staging_00.glb",
        "hab_ver_v3_sc0_staging_00.scene_instance.json",
        "hab_ver_v3_sc0_staging_00.stage_config.json",
    ]


def test_missing_assets_are_named_with_where_to_get_them(tmp_path):
    (tmp_path / "replica_cad" / "configs" / "objects").mkdir(parents=True)
    with pytest.raises(tool.AssetsMissingError) as raised:
        tool.check_assets(str(tmp_path))
    message = str(raised.value)
    assert "replica_cad/urdf/fridge (ReplicaCAD fridge)" in message
    assert "robots/hab_fetch/robots/hab_suction.urdf (Fetch robot)" in message
    assert "replica_cad/configs/objects" not in message  # present
    assert "datasets_download --uids replica_cad_dataset hab_fetch" in message


def test_main_reports_missing_assets_in_one_line_with_exit_2(tmp_path, capsys):
    assert tool.main(["--assets", str(tmp_path / "none"), "--out", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{tool.COMMAND}: error: HAB assets missing")


def test_the_episode_folder_is_replaced_whole_or_not_at_all(tmp_path):
    final = tmp_path / "v1"
    final.mkdir()
    (final / "old.json.gz").write_text("old")
    with pytest.raises(RuntimeError):
        with folder_written_whole(str(final)) as tmp:
            (tmp_path / "unused").mkdir()
            open(f"{tmp}/new.json.gz", "w").write("new")
            raise RuntimeError("killed midway")
    assert sorted(p.name for p in final.iterdir()) == ["old.json.gz"]
    with folder_written_whole(str(final)) as tmp:
        open(f"{tmp}/new.json.gz", "w").write("new")
    assert sorted(p.name for p in final.iterdir()) == ["new.json.gz"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unused", "v1"]


def _episode(objects, named):
    return types.SimpleNamespace(
        rigid_objs=[(f"{o}.object_config.json", None) for o in objects],
        name_to_receptacle={n: "r" for n in named},
    )


def test_stale_objects_are_those_named_but_not_added():
    ok = _episode(["cup", "cup", "bowl"], ["cup_:0000", "cup_:0001", "bowl_:0000"])
    assert tool.stale_objects(ok) == []
    # habitat-lab removed an unstable sponge from rigid_objs only.
    stale = _episode(["cup"], ["cup_:0000", "sponge_:0000"])
    assert tool.stale_objects(stale) == ["sponge_:0000"]


def test_rigid_receptacles_are_checked_as_parent_link_minus_one(monkeypatch):
    from habitat.datasets.rearrange import rearrange_generator

    seen = []

    def fake(sim, receptacles, *args, **kwargs):
        seen.append([r.parent_link for r in receptacles])
        return [r for r in receptacles if r.parent_link != 3]

    monkeypatch.setattr(rearrange_generator, "get_navigable_receptacles", fake)
    table = types.SimpleNamespace(parent_link=None)
    drawer = types.SimpleNamespace(parent_link=3)
    with tool.rigid_receptacles_navigable():
        kept = rearrange_generator.get_navigable_receptacles(None, [table, drawer])
    assert seen == [[-1], [3]] and kept == [table]
    assert table.parent_link is None  # restored for the episode's records
    assert rearrange_generator.get_navigable_receptacles is fake


def test_the_generator_config_is_habitats_on_our_scene_and_objects():
    spec = next(s for s in tool.DATASETS if s.name == "tidy_house_10k_1k")
    config = tool.generator_config(spec, "data/hab_ver", "hab_ver_v3_sc0_staging_00")
    assert config.dataset_path == f"data/hab_ver/{hab_scene.DATASET_CONFIG}"
    assert list(config.additional_object_paths) == []
    assert config.scene_sampler.params.scene == "hab_ver_v3_sc0_staging_00"
    assert list(config.scene_sets[0].included_substrings) == [hab_scene.SCENE_PREFIX]
    assert list(config.object_sets[0].included_substrings) == list(tool.OBJECTS)
    assert [s.params.num_samples for s in config.object_samplers] == [[5, 5]]
    assert [s.params.num_samples for s in config.object_target_samplers] == [[5, 5]]
    # habitat-lab's own markers (the drawers' and fridge's handles) are kept.
    assert "fridge_push_point" in [m.name for m in config.markers]


def _episode_file(path, scenes):
    path.parent.mkdir(parents=True, exist_ok=True)
    episodes = [{"episode_id": str(i), "scene_id": scene} for i, scene in enumerate(scenes)]
    path.write_bytes(gzip.compress(json.dumps({"episodes": episodes}).encode()))
    return path.read_bytes()


def test_only_carries_the_other_episode_files_whose_scenes_are_still_made(tmp_path):
    # make_hab_dataset --only rearrange_easy replaces the episode folder whole:
    # before this, it dropped every other file (the scenario files among them).
    made_now = next(s for s in tool.DATASETS if s.name == "rearrange_easy")
    remade = _episode_file(tmp_path / "val" / "rearrange_easy.json.gz", ["hab_ver_a"])
    tidy_train = _episode_file(tmp_path / "train" / "tidy.json.gz", ["hab_ver_a", "hab_ver_b"])
    tidy_val = _episode_file(tmp_path / "val" / "tidy.json.gz", ["hab_ver_b"])
    _episode_file(tmp_path / "val" / "old.json.gz", ["hab_ver_b", "hab_ver_gone"])
    (tmp_path / "val" / "broken.json.gz").write_bytes(b"not gzip")
    said = []

    kept = tool._other_files(str(tmp_path), [made_now], ["hab_ver_a", "hab_ver_b"], said.append)

    assert kept == [("train", "tidy.json.gz", tidy_train), ("val", "tidy.json.gz", tidy_val)]
    assert remade not in [data for _, _, data in kept]
    assert len(said) == 2
    assert said[0].startswith("dropped val/broken.json.gz: unreadable")
    assert said[1].startswith("dropped val/old.json.gz: its episodes are on hab_ver_gone,")
    # A folder not made yet carries nothing.
    assert tool._other_files(str(tmp_path / "absent"), [made_now], ["hab_ver_a"], said.append) == []


def test_episodes_are_written_from_a_folder_without_data(tmp_path, monkeypatch):
    # habitat-lab's dataset writes its physics settings to data/ under the
    # working directory and fails where there is none; the tool puts them
    # into the folder it makes.
    import habitat.datasets.utils as habitat_dataset_utils

    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(tmp_path)
    text = tool._dataset_json([], str(out))
    assert json.loads(text)["episodes"] == []
    physics = json.loads((out / "default.physics_config.json").read_text())
    assert physics["physics_simulator"] == "bullet" and physics["timestep"] == 0.008
    assert not (tmp_path / "data").exists()
    assert habitat_dataset_utils.DEFAULT_PHYSICS_CONFIG_PATH == "data/default.physics_config.json"
