"""Dataset faults on the real simulator, through upstream's entry point: one line, exit 2,
before any env starts (issue 30: a traceback per env worker that named no file)."""

import gzip
import json
import shutil

import pytest

from habitat_ver.config.validate_envs import GPU_DEVICE_KEY, cuda_visibly_absent

from .conftest import REPO, dataset_overrides, run_real

pytestmark = pytest.mark.sim

PREFIX = "habitat_baselines.run: error: "


def _run(data, tmp_path, *extra):
    return run_real(
        [
            "-m",
            "habitat_baselines.run",
            "--config-name=pointnav/ddppo_simple_room",
            *dataset_overrides(data),
            "habitat_baselines.num_environments=2",
            f"habitat_baselines.checkpoint_folder={tmp_path / 'ckpt'}",
            f"habitat_baselines.tensorboard_dir={tmp_path / 'tb'}",
            f"habitat_baselines.log_file={tmp_path / 'train.log'}",
            *extra,
        ],
        cwd=REPO,
    )


def _one_line(done):
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "EnvWorkerError" not in done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith(PREFIX)]
    assert len(lines) == 1, done.stderr[-3000:]
    return lines[0][len(PREFIX) :]


@pytest.fixture
def data(pointnav_data, tmp_path):
    """A copy of the generated dataset, to damage."""
    copy = tmp_path / "data"
    shutil.copytree(pointnav_data, copy)
    return copy


def _train_file(data):
    return data / "datasets/pointnav/simple_room/v1/train/train.json.gz"


def test_a_corrupt_episode_file_is_named(data, tmp_path):
    _train_file(data).write_bytes(b"\x00not gzip at all")
    message = _one_line(_run(data, tmp_path))
    assert message.startswith(
        f"habitat.dataset.data_path: the episode file '{_train_file(data)}' is not a gzip "
        "file (it starts with b'\\x00not gzi')"
    )


def test_a_missing_scene_file_is_named(data, tmp_path):
    episodes = json.loads(gzip.decompress(_train_file(data).read_bytes()))["episodes"]
    episodes[1]["scene_id"] = "habitat_ver/missing_room.glb"
    _train_file(data).write_bytes(gzip.compress(json.dumps({"episodes": episodes}).encode()))
    message = _one_line(_run(data, tmp_path))
    missing = data / "scene_datasets/habitat_ver/missing_room.glb"
    assert message.startswith(f"the scene file '{missing}' does not exist: 1 episode(s) of ")


def test_a_missing_scenes_dir_is_named(data, tmp_path):
    shutil.rmtree(data / "scene_datasets")
    message = _one_line(_run(data, tmp_path))
    assert message.startswith(
        f"habitat.dataset.scenes_dir='{data / 'scene_datasets'}' is not allowed: no such folder"
    )


@pytest.mark.skipif(not cuda_visibly_absent(), reason="this machine has a CUDA device")
def test_a_cuda_render_device_without_cuda_names_the_cpu_setting(pointnav_data, tmp_path):
    message = _one_line(_run(pointnav_data, tmp_path, f"{GPU_DEVICE_KEY}=0"))
    assert message.startswith(f"{GPU_DEVICE_KEY}=0 is not allowed: this machine has no CUDA")
    assert message.endswith(f"{GPU_DEVICE_KEY}=-1 renders on the CPU")
