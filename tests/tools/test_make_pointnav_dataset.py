"""make_pointnav_dataset leaves the old complete dataset or none, never a partial one.

The simulator is stubbed (sampling is tested on the real one in tests/sim): these
tests are about the files.
"""

import errno
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
    monkeypatch.setattr(tool, "_make_sim", lambda path: _FakeSim())

    def sample(sim, scene_id, count, low, high, seed, max_tries=100000):
        return [{"episode_id": "0", "scene_id": scene_id, "seed": seed} for _ in range(count)]

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

tool._make_sim = lambda path: Sim()
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
