"""make_pointnav_dataset leaves the old complete dataset or none, never a partial one.

The simulator is stubbed (sampling is tested on the real one in tests/sim): these
tests are about the files.
"""

import errno
import os
import gzip
import json
import signal
import subprocess
import sys

import pytest

from habitat_ver.common.atomic import FileWriteError
from habitat_ver.tools import make_pointnav_dataset as tool


class _FakeSim:
    pathfinder = type("PathFinder", (), {"is_loaded": True})

    def close(self):
        pass


@pytest.fixture
def stub_sim(monkeypatch, tmp_path):
    """A stage file, a simulator that loads it, and one fake episode per sample."""
    stage = tmp_path / "stages" / "room.glb"
    stage.parent.mkdir()
    stage.write_bytes(b"stage")
    monkeypatch.setattr(tool, "_make_sim", lambda path, scene_dataset=None: _FakeSim())

    def sample(sim, scene_id, count, low, high, seed, max_tries=100000, scene_dataset=None):
        episode = {"episode_id": "0", "scene_id": scene_id, "seed": seed}
        if scene_dataset:
            episode["scene_dataset_config"] = scene_dataset
        return [dict(episode) for _ in range(count)]

    monkeypatch.setattr(tool, "sample_episodes", sample)
    return str(stage)


def _make(stage, out, train=3):
    return tool.make_dataset([stage], str(out), "room", {"train": train, "val": 1}, 1.0, 3.0)


def _episodes(out, split):
    path = out / "datasets/pointnav/room/v1" / split / f"{split}.json.gz"
    return json.loads(gzip.decompress(path.read_bytes()))["episodes"]


def _fail_on_val(monkeypatch):
    """The disk is full when the val split is written."""
    real = tool.write_atomically

    def write(path, writer):
        if path.endswith("val.json.gz"):
            raise FileWriteError(errno.ENOSPC, "No space left on device", path)
        real(path, writer)

    monkeypatch.setattr(tool, "write_atomically", write)


def _leftovers(out):
    return sorted(p.name for p in (out / "datasets/pointnav").iterdir() if p.name != "room")


def test_a_full_disk_on_a_fresh_dataset_leaves_none(stub_sim, tmp_path, monkeypatch):
    _fail_on_val(monkeypatch)
    with pytest.raises(FileWriteError):
        _make(stub_sim, tmp_path / "data")
    # The train split alone was a dataset a training run loaded.
    assert not (tmp_path / "data/datasets/pointnav/room").exists()
    assert _leftovers(tmp_path / "data") == []


def test_a_full_disk_over_an_old_dataset_leaves_it_whole(stub_sim, tmp_path, monkeypatch):
    out = tmp_path / "data"
    _make(stub_sim, out, train=3)
    _fail_on_val(monkeypatch)
    with pytest.raises(FileWriteError):
        _make(stub_sim, out, train=5)
    assert (len(_episodes(out, "train")), len(_episodes(out, "val"))) == (3, 1)
    assert _leftovers(out) == []


def test_a_new_dataset_replaces_the_old_one(stub_sim, tmp_path):
    out = tmp_path / "data"
    _make(stub_sim, out, train=3)
    paths = _make(stub_sim, out, train=5)
    assert (len(_episodes(out, "train")), len(_episodes(out, "val"))) == (5, 1)
    assert [e["episode_id"] for e in _episodes(out, "train")] == ["0", "1", "2", "3", "4"]
    assert paths["data_path"] == str(out / "datasets/pointnav/room/v1/{split}/{split}.json.gz")
    assert _leftovers(out) == []


# Generates with a stubbed simulator and stops for good once the train split is written.
KILLED_WRITER = """
import sys, time
from habitat_ver.tools import make_pointnav_dataset as tool

class Sim:
    pathfinder = type("PathFinder", (), {"is_loaded": True})
    def close(self):
        pass

tool._make_sim = lambda path, scene_dataset=None: Sim()
tool.sample_episodes = lambda sim, scene, count, *a, **k: [{"scene_id": scene}] * count
real = tool.write_atomically

def write(path, writer):
    real(path, writer)
    if path.endswith("train.json.gz"):
        print("train written", flush=True)
        time.sleep(600)

tool.write_atomically = write
tool.make_dataset([sys.argv[1]], sys.argv[2], "room", {"train": 7, "val": 1}, 1.0, 3.0)
"""


@pytest.mark.multiproc
@pytest.mark.parametrize("old", [False, True])
def test_kill_9_mid_write_leaves_the_old_dataset_or_none(stub_sim, tmp_path, old):
    out = tmp_path / "data"
    if old:
        _make(stub_sim, out, train=3)
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, stub_sim, str(out)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "train written"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=60)
    if old:
        assert (len(_episodes(out, "train")), len(_episodes(out, "val"))) == (3, 1)
    else:
        assert not (out / "datasets/pointnav/room").exists()
    # The next run clears the dead writer's folder and writes a whole dataset.
    _make(stub_sim, out, train=2)
    assert (len(_episodes(out, "train")), len(_episodes(out, "val"))) == (2, 1)
    assert _leftovers(out) == []


def test_the_command_reports_a_full_disk_in_one_line(stub_sim, tmp_path, monkeypatch, capsys):
    _fail_on_val(monkeypatch)
    stages = str(tmp_path / "stages")
    with pytest.raises(SystemExit) as caught:
        tool.main(["--stages-dir", stages, "--stage", "room.glb", "--out", str(tmp_path / "d")])
    assert caught.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{tool.COMMAND}: error: could not write ") and "\n" not in err
    assert "No space left on device" in err and "no dataset was written" in err


def test_a_scene_instance_is_named_relative_to_scene_datasets_and_not_copied(
    stub_sim, tmp_path, monkeypatch
):
    instance = tmp_path / "hab" / "scenes" / "apt.scene_instance.json"
    instance.parent.mkdir(parents=True)
    instance.write_text("{}")
    loaded = []
    monkeypatch.setattr(
        tool,
        "_make_sim",
        lambda path, scene_dataset=None: loaded.append((path, scene_dataset)) or _FakeSim(),
    )
    out = tmp_path / "d"
    tool.make_dataset(
        [stub_sim, str(instance)], str(out), "room", {"train": 1, "val": 1}, 1.0, 3.0, "hab.json"
    )
    episodes = _episodes(out, "train")
    ids = [e["scene_id"] for e in episodes]
    assert ids == ["habitat_ver/room.glb", "../../hab/scenes/apt.scene_instance.json"]
    # habitat-lab configures the simulator with each episode's scene dataset.
    assert [e.get("scene_dataset_config") for e in episodes] == [None, "hab.json"]
    # habitat-lab joins scenes_dir and scene_id: that path is the instance itself.
    joined = out / "scene_datasets" / ids[1]
    assert joined.resolve() == instance.resolve()
    assert sorted(p.name for p in (out / "scene_datasets/habitat_ver").iterdir()) == ["room.glb"]
    assert [d for _, d in loaded] == ["hab.json", "hab.json"]


def test_a_scene_instance_without_its_scene_dataset_is_one_line_and_exit_2(tmp_path, capsys):
    instance = tmp_path / "apt.scene_instance.json"
    instance.write_text("{}")
    with pytest.raises(SystemExit) as caught:
        tool.main(["--stage", str(instance), "--out", str(tmp_path / "d")])
    assert caught.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "is a scene instance: pass its --scene-dataset" in err and "\n" not in err


class _TwoFloors:
    """A navmesh with a floor at y=0 and a ceiling's top at y=3 (every other
    pair of points: start and goal on the same island), every pair reachable at
    its distance along x."""

    def __init__(self):
        self.calls = 0
        sim = self

        class PathFinder:
            def seed(self, seed):
                sim.calls = 0

            def get_random_navigable_point(self):
                sim.calls += 1
                height = 3.0 if (sim.calls - 1) // 2 % 2 else 0.0
                return [float(2 * sim.calls % 7), height, 0.0]

        self.pathfinder = PathFinder()

    def geodesic_distance(self, start, goals):
        return float(abs(start[0] - goals[0][0]))

    def island_radius(self, point):
        return 10.0


def test_episodes_stay_on_the_lowest_floor():
    episodes = tool.sample_episodes(_TwoFloors(), "s", 20, 1.0, 4.0, seed=0)
    heights = {e["start_position"][1] for e in episodes} | {
        e["goals"][0]["position"][1] for e in episodes
    }
    assert heights == {0.0}
    assert "scene_dataset_config" not in episodes[0]


def test_episodes_of_a_scene_dataset_name_it():
    episodes = tool.sample_episodes(_TwoFloors(), "s", 2, 1.0, 4.0, seed=0, scene_dataset="d.json")
    assert [e["scene_dataset_config"] for e in episodes] == ["d.json", "d.json"]


def test_the_command_prints_a_line_per_file_and_logs_the_rest(stub_sim, tmp_path, capfd):
    # habitat-lab and habitat-sim print from Python and C++ while it samples
    # (sys.__stderr__: the process's stderr, under pytest's capture too).
    def noisy_sim(path, scene_dataset=None):
        print("2026-11-27 12:01:30,585 initializing sim Sim-v0", file=sys.__stderr__, flush=True)
        os.write(2, b"[12:01:30:593913]:[Warning]:[Scene] SemanticScene.cpp(123) ...\n")
        os.write(1, b"Renderer: llvmpipe (LLVM 15.0.6, 256 bits) by Mesa/X.org\n")
        return _FakeSim()

    tool._make_sim, real = noisy_sim, tool._make_sim
    out = tmp_path / "d"
    try:
        tool.main(["--stage", stub_sim, "--out", str(out), "--train-episodes", "3"])
    finally:
        tool._make_sim = real
    printed = capfd.readouterr()
    assert printed.err == ""
    assert printed.out.splitlines() == [
        f"{tool.COMMAND}: habitat-lab's and habitat-sim's output goes to {out}/{tool.LOG_FILE}",
        f"{out}/scene_datasets/habitat_ver/room.glb: stage copied from {stub_sim}",
        f"{out}/datasets/pointnav/room/v1/train/train.json.gz: 3 episodes on 1 scene(s)",
        f"{out}/datasets/pointnav/room/v1/val/val.json.gz: 50 episodes on 1 scene(s)",
        f"dataset 'room': habitat.dataset.data_path={out}/datasets/pointnav/room/v1/"
        "{split}/{split}.json.gz",
    ]
    log = (out / tool.LOG_FILE).read_text()
    assert "initializing sim Sim-v0" in log and "SemanticScene.cpp" in log and "Renderer" in log
