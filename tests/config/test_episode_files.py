"""Episode and scene files checked before any env starts: one ConfigError naming the file."""

import gzip
import json
import re

import pytest

from habitat_ver.config import episode_files, validate_envs
from habitat_ver.config.compose import get_config
from habitat_ver.config.errors import ConfigError
from habitat_ver.config.validate_envs import validate_pointnav_dataset, validate_render_device

SCENE_ID = "habitat_ver/simple_room.glb"


def _episode(index, scene_id=SCENE_ID):
    return {
        "episode_id": str(index),
        "scene_id": scene_id,
        "start_position": [0.0, 0.0, 0.0],
        "start_rotation": [0.0, 0.0, 0.0, 1.0],
        "goals": [{"position": [1.0, 0.0, 0.0], "radius": 0.2}],
    }


def _write(path, payload: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)


def _episodes_gz(episodes) -> bytes:
    return gzip.compress(json.dumps({"episodes": episodes}).encode())


@pytest.fixture
def data(tmp_path):
    """A PointNav-v1 layout as the generator writes it: two episodes on one stage."""
    _write(tmp_path / "scene_datasets" / SCENE_ID, b"stage")
    train = tmp_path / "datasets/pointnav/simple_room/v1/train/train.json.gz"
    _write(train, _episodes_gz([_episode(0), _episode(1)]))
    return tmp_path


def _config(root, *extra):
    data_path = root / "datasets/pointnav/simple_room/v1/{split}/{split}.json.gz"
    return get_config(
        "pointnav/ddppo_simple_room",
        [
            f"habitat.dataset.data_path='{data_path}'",
            f"habitat.dataset.scenes_dir={root / 'scene_datasets'}",
            *extra,
        ],
    )


def _train_file(root):
    return root / "datasets/pointnav/simple_room/v1/train/train.json.gz"


def test_a_complete_dataset_passes(data):
    validate_pointnav_dataset(_config(data))


CORRUPT = [
    # (the file's bytes, what the message says)
    (bytes(range(7, 71)), r"is not a gzip file \(it starts with b'\\x07\\x08"),
    (gzip.compress(b'{"episodes": [1 2]}'), r"is not valid JSON \(line 1 column 17: Expecting ','"),
    (_episodes_gz([_episode(i) for i in range(50)])[:200], r"is truncated"),
    (gzip.compress(b'{"episode": []}'), r'is not an episode file: it has no "episodes" list'),
    (gzip.compress(b"\xff\xfe{}"), r"is not UTF-8 text once decompressed \(byte 0"),
]


@pytest.mark.parametrize(
    "payload, problem",
    CORRUPT,
    ids=["random-bytes", "bad-json", "truncated-gzip", "no-episodes", "not-utf8"],
)
def test_a_corrupt_episode_file_is_one_error_naming_it(data, payload, problem):
    _train_file(data).write_bytes(payload)
    with pytest.raises(ConfigError) as caught:
        validate_pointnav_dataset(_config(data))
    message = str(caught.value)
    start = f"habitat.dataset.data_path: the episode file '{_train_file(data)}' "
    assert message.startswith(start), message
    assert re.search(problem, message), message
    assert "python -m habitat_ver.tools.make_pointnav_dataset" in message
    assert "\n" not in message


def test_a_missing_scenes_dir_is_named_not_the_dataset(data):
    missing = data / "no_scenes"
    with pytest.raises(
        ConfigError,
        match=re.escape(f"habitat.dataset.scenes_dir='{missing}' is not allowed: no such folder"),
    ):
        validate_pointnav_dataset(_config(data, f"habitat.dataset.scenes_dir={missing}"))


def test_a_missing_scene_file_is_named_with_its_episodes(data):
    episodes = [_episode(0), _episode(1, "habitat_ver/missing_room.glb")]
    episodes += [_episode(2, "habitat_ver/missing_room.glb"), _episode(3, "other/gone.glb")]
    _train_file(data).write_bytes(_episodes_gz(episodes))
    scene = data / "scene_datasets" / "habitat_ver" / "missing_room.glb"
    with pytest.raises(ConfigError) as caught:
        validate_pointnav_dataset(_config(data))
    assert str(caught.value).startswith(
        f"the scene file '{scene}' does not exist: 2 episode(s) of '{_train_file(data)}' "
        f"name it (habitat.dataset.scenes_dir='{data / 'scene_datasets'}'); "
        "1 other scene file(s) are missing too"
    ), caught.value


def test_scenes_left_out_by_content_scenes_are_not_checked(data):
    episodes = [_episode(0), _episode(1, "habitat_ver/missing_room.glb")]
    _train_file(data).write_bytes(_episodes_gz(episodes))
    validate_pointnav_dataset(_config(data, "habitat.dataset.content_scenes=[simple_room]"))
    with pytest.raises(ConfigError, match="missing_room.glb"):
        validate_pointnav_dataset(_config(data, "habitat.dataset.content_scenes=[missing_room]"))


def test_per_scene_content_files_are_read_and_their_scenes_checked(data):
    _train_file(data).write_bytes(_episodes_gz([]))
    content = _train_file(data).parent / "content"
    _write(content / "simple_room.json.gz", _episodes_gz([_episode(0)]))
    validate_pointnav_dataset(_config(data))
    _write(content / "other.json.gz", b"not gzip")
    with pytest.raises(
        ConfigError,
        match=re.escape(
            f"habitat.dataset.content_scenes: the episode file '{content / 'other.json.gz'}' "
            "is not a gzip file"
        ),
    ):
        validate_pointnav_dataset(_config(data))
    _write(content / "other.json.gz", _episodes_gz([_episode(0, "gone.glb")]))
    with pytest.raises(
        ConfigError, match=re.escape(f"episode(s) of '{content / 'other.json.gz'}'")
    ):
        validate_pointnav_dataset(_config(data))


def test_scene_file_resolves_as_habitat_lab_does():
    assert episode_files.scene_file("a/b.glb", "/s") == "/s/a/b.glb"
    assert episode_files.scene_file("data/scene_datasets/a/b.glb", "/s") == "/s/a/b.glb"
    assert episode_files.scene_file("/abs/b.glb", "/s") == "/abs/b.glb"


def test_read_episode_file_names_the_key_and_remedy(tmp_path):
    path = tmp_path / "ep.json.gz"
    with pytest.raises(ConfigError) as caught:
        episode_files.read_episode_file(str(path), "habitat.dataset.data_path", "run make_it")
    assert str(caught.value) == (
        f"habitat.dataset.data_path: the episode file '{path}' does not exist; run make_it"
    )
    path.write_bytes(_episodes_gz([_episode(0)]))
    assert episode_files.read_episode_file(str(path), "k")["episodes"][0]["episode_id"] == "0"


GPU_KEY = "habitat.simulator.habitat_sim_v0.gpu_device_id"


@pytest.fixture
def no_cuda(monkeypatch):
    """A machine with habitat-sim and without CUDA (the test process is sim-free)."""
    monkeypatch.setattr(validate_envs.sim_free, "is_active", lambda: False)
    monkeypatch.setattr(validate_envs, "cuda_visibly_absent", lambda: True)


def test_a_cuda_device_on_a_machine_without_one_names_the_cpu_setting(data, no_cuda):
    with pytest.raises(ConfigError) as caught:
        validate_render_device(_config(data, f"{GPU_KEY}=0"))
    assert str(caught.value) == (
        f"{GPU_KEY}=0 is not allowed: this machine has no CUDA device (torch sees none and "
        f"there is no /dev/nvidia*); {GPU_KEY}=-1 renders on the CPU"
    )
    validate_render_device(_config(data, f"{GPU_KEY}=-1"))


def test_no_camera_or_no_habitat_sim_task_needs_no_cuda_device(data, no_cuda):
    from habitat.config import read_write

    config = _config(data, f"{GPU_KEY}=0")
    with read_write(config):
        config.habitat.simulator.agents.main_agent.sim_sensors = {}
    validate_render_device(config)
    validate_render_device(get_config("gym/ddppo_cartpole"))  # habitat's default device 0


def test_nvidia_device_files_count_as_cuda_where_torch_sees_none(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(validate_envs.glob, "glob", lambda pattern: ["/dev/nvidia0"])
    assert not validate_envs.cuda_visibly_absent()
    monkeypatch.setattr(validate_envs.glob, "glob", lambda pattern: [])
    assert validate_envs.cuda_visibly_absent()


def test_several_ranks_leave_the_device_to_each_rank(data, no_cuda, monkeypatch):
    from habitat_ver.config.validate import validate

    # torchrun's rank 1 of 2: the trainer sets each rank's device at its start
    # (habitat_ver.distributed.rank_devices), whatever the config says.
    for name, value in (("LOCAL_RANK", "1"), ("RANK", "1"), ("WORLD_SIZE", "2")):
        monkeypatch.setenv(name, value)
    validate(_config(data, f"{GPU_KEY}=0"))


def test_existing_splits_are_those_with_an_episode_file(tmp_path):
    template = str(tmp_path / "v1" / "{split}" / "{split}.json.gz")
    for split in ("train", "val"):
        _write(tmp_path / "v1" / split / f"{split}.json.gz", b"")
    _write(tmp_path / "v1" / "test" / "other.json.gz", b"")  # not test/test.json.gz
    _write(tmp_path / "v1" / "minival" / "val.json.gz", b"")  # the two {split} differ
    assert episode_files.existing_splits(template) == ["train", "val"]
    assert episode_files.existing_splits(str(tmp_path / "fixed.json.gz")) == []


def test_a_split_without_its_file_names_the_splits_there_are(tmp_path):
    template = str(tmp_path / "{split}" / "ep.json.gz")
    episode_files.check_split(template, "vall", "habitat.dataset.split")  # no split at all
    for split in ("val", "train"):
        _write(tmp_path / split / "ep.json.gz", b"")
    episode_files.check_split(template, "val", "habitat.dataset.split")
    with pytest.raises(ConfigError) as caught:
        episode_files.check_split(template, "vall", "habitat.dataset.split", "make it")
    assert str(caught.value) == (
        f"habitat.dataset.split='vall' is not allowed: there is no {tmp_path}/vall/ep.json.gz "
        f"(habitat.dataset.data_path={template!r}); the splits there are train, val; "
        "to use this split, make it"
    )


def test_a_pointnav_run_on_a_misspelled_split_names_the_split(data):
    config = _config(data, "habitat.dataset.split=trian")
    with pytest.raises(ConfigError, match=r"^habitat\.dataset\.split='trian' is not allowed: "):
        validate_pointnav_dataset(config)
    config = _config(data, "habitat_baselines.evaluate=True", "habitat_baselines.eval.split=tst")
    with pytest.raises(ConfigError, match=r"the splits there are train; to use this split, "):
        validate_pointnav_dataset(config)
