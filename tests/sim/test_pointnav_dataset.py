"""The generated PointNav dataset loads through habitat-lab's own PointNav-v1."""

import gzip
import json

import pytest

from .conftest import REPO, TRAIN_EPISODES, VAL_EPISODES, dataset_overrides, run_real

pytestmark = pytest.mark.sim

# Loads both splits with habitat-lab's dataset class and re-measures every
# episode's geodesic distance on the navmesh the PointNav task builds.
CHECK = """
import json, sys
import habitat_ver, habitat
from habitat.config import read_write
from habitat.datasets import make_dataset
from habitat.sims import make_sim
from habitat_ver.config.compose import get_config
config = get_config("pointnav/ddppo_simple_room", sys.argv[1:])
result = {}
for split in ("train", "val"):
    with read_write(config):
        config.habitat.dataset.split = split
    dataset = make_dataset("PointNav-v1", config=config.habitat.dataset)
    result[split] = len(dataset.episodes)
with read_write(config):
    config.habitat.simulator.scene = dataset.episodes[0].scene_id
    config.habitat.simulator.agents.main_agent.sim_sensors = {}
sim = make_sim("Sim-v0", config=config.habitat.simulator)
result["errors"] = [
    abs(sim.geodesic_distance(e.start_position, [e.goals[0].position])
        - e.info["geodesic_distance"])
    for e in dataset.episodes]
result["navigable"] = [bool(sim.is_navigable(e.start_position)) for e in dataset.episodes]
print(json.dumps(result))
"""


def test_splits_load_with_habitat_lab_and_distances_match_the_navmesh(pointnav_data):
    out = run_real(["-c", CHECK, *dataset_overrides(pointnav_data)], cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert (result["train"], result["val"]) == (TRAIN_EPISODES, VAL_EPISODES)
    assert max(result["errors"]) < 1e-3
    assert all(result["navigable"])


def test_episodes_follow_pointnav_v1_and_the_distance_range(pointnav_data):
    path = pointnav_data / "datasets/pointnav/simple_room/v1/train/train.json.gz"
    episodes = json.loads(gzip.decompress(path.read_bytes()))["episodes"]
    assert [e["episode_id"] for e in episodes] == [str(i) for i in range(TRAIN_EPISODES)]
    assert {e["scene_id"] for e in episodes} == {"habitat_ver/simple_room.glb"}
    assert (pointnav_data / "scene_datasets/habitat_ver/simple_room.glb").is_file()
    for e in episodes:
        assert 1.0 <= e["info"]["geodesic_distance"] <= 3.0
        # geodesic >= straight line; a unit quaternion about the y axis.
        assert e["info"]["geodesic_distance"] >= e["info"]["euclidean_distance"] - 1e-4
        x, y, z, w = e["start_rotation"]
        assert x == z == 0.0 and abs(y * y + w * w - 1.0) < 1e-6
        assert e["goals"][0]["radius"] == 0.2


def test_missing_stage_is_one_line_and_exit_2(tmp_path):
    out = run_real(
        [
            "-m",
            "habitat_ver.tools.make_pointnav_dataset",
            "--stages-dir",
            str(tmp_path),
            "--out",
            str(tmp_path / "data"),
        ],
        cwd=tmp_path,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert f"stage '{tmp_path / 'simple_room.glb'}' not found" in out.stderr
    assert not (tmp_path / "data").exists()
