"""Atomic writes, safe loads, corrupt-file fallback, upstream-format files."""

import os
import pickle

import pytest
import torch
from omegaconf import OmegaConf

import habitat_ver  # noqa: F401  (sim-free mode before habitat)
from habitat.config.default_structured_configs import HabitatConfig
from habitat_ver.common.checkpoint import (
    CheckpointsWithoutResumeStateError,
    CorruptCheckpointError,
    ResumeStateFiles,
    UnusableResumeStateError,
    atomic_torch_save,
    config_to_plain,
    load_checkpoint_file,
    save_checkpoint_file,
)


def _state(step: int):
    config = OmegaConf.create({"habitat_baselines": {"num_environments": 4}})
    return {
        "state_dict": {"w": torch.full((3,), float(step)), "pattern": _PATTERN + step},
        "config": config_to_plain(config),
        "step": step,
    }


# Distinctive tensor data, found again in the file's bytes to flip one bit.
_PATTERN = torch.arange(1000.0, 1064.0)


def _flip_one_bit_of_tensor_data(path, step: int) -> None:
    data = bytearray(path.read_bytes())
    at = bytes(data).find((_PATTERN + step).numpy().tobytes())
    assert at > 0, "tensor data not found in the file"
    data[at + 100] ^= 0x04  # inside element 25: 1025.0 becomes another float
    path.write_bytes(bytes(data))


def test_round_trip_restores_tensors_and_config(tmp_path):
    path = tmp_path / "ckpt.0.pth"
    atomic_torch_save(_state(7), str(path))
    loaded = load_checkpoint_file(str(path))
    assert torch.equal(loaded["state_dict"]["w"], torch.full((3,), 7.0))
    assert loaded["config"].habitat_baselines.num_environments == 4
    assert OmegaConf.is_readonly(loaded["config"])
    assert loaded["step"] == 7


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path):
    path = tmp_path / "ckpt.pth"
    atomic_torch_save(_state(1), str(path))

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        atomic_torch_save({"bad": Unpicklable()}, str(path))
    assert load_checkpoint_file(str(path))["step"] == 1
    assert sorted(os.listdir(tmp_path)) == ["ckpt.pth"]


def test_truncated_file_is_reported_with_its_path(tmp_path):
    path = tmp_path / "ckpt.pth"
    atomic_torch_save(_state(1), str(path))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptCheckpointError, match="ckpt.pth"):
        load_checkpoint_file(str(path))


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.pth"):
        load_checkpoint_file(str(tmp_path / "nope.pth"))


def test_upstream_format_with_structured_config_loads(tmp_path):
    # habitat-baselines pickles the DictConfig itself, structured dataclasses
    # included; torch >= 2.6 refuses that with a plain torch.load.
    config = OmegaConf.structured(HabitatConfig)
    path = tmp_path / "upstream.pth"
    torch.save({"state_dict": {"w": torch.ones(2)}, "config": config}, str(path))
    with pytest.raises(pickle.UnpicklingError):
        torch.load(str(path), weights_only=True)
    loaded = load_checkpoint_file(str(path))
    assert loaded["config"].seed == config.seed
    assert torch.equal(loaded["state_dict"]["w"], torch.ones(2))


def test_upstream_config_with_a_filled_resolver_cache_loads(tmp_path):
    # OmegaConf keeps a cached resolver's values in a defaultdict, which torch's
    # weights-only unpickler cannot fill: habitat-baselines' own checkpoints
    # were reported as "truncated or corrupt".
    if not OmegaConf.has_resolver("habitat_ver_test_cached"):
        OmegaConf.register_new_resolver("habitat_ver_test_cached", lambda: 3, use_cache=True)
    config = OmegaConf.create({"seed": "${habitat_ver_test_cached:}", "n": 2})
    assert config.seed == 3  # fills the cache
    path = tmp_path / "upstream.pth"
    torch.save({"state_dict": {"w": torch.ones(2)}, "config": config}, str(path))
    loaded = load_checkpoint_file(str(path))
    assert OmegaConf.to_container(loaded["config"], resolve=True) == {"seed": 3, "n": 2}
    assert torch.equal(loaded["state_dict"]["w"], torch.ones(2))


@pytest.mark.parametrize("old_module", ["habitat_ver.config.schema", "habitat_ver.trainers.gone"])
def test_a_section_class_that_moved_since_the_checkpoint_loads(tmp_path, monkeypatch, old_module):
    # A checkpoint pickles each settings section's dataclass by its path at the
    # time; after the class moves (learner: config/schema.py ->
    # system/scheduling.py) the file must still load.
    import sys
    import types

    import habitat_ver.registration  # noqa: F401  (registers the sections)
    from habitat_ver.system.scheduling import LearnerConfig

    module = sys.modules.get(old_module) or types.ModuleType(old_module)
    monkeypatch.setitem(sys.modules, old_module, module)
    monkeypatch.setattr(module, "LearnerConfig", LearnerConfig, raising=False)
    monkeypatch.setattr(LearnerConfig, "__module__", old_module)
    config = OmegaConf.create({"learner": OmegaConf.structured(LearnerConfig(num_threads=3))})
    path = tmp_path / "old.pth"
    torch.save({"config": config}, str(path))
    monkeypatch.undo()  # the class is back where it lives now; the old path is gone
    assert not hasattr(sys.modules.get(old_module), "LearnerConfig")

    loaded = load_checkpoint_file(str(path))
    assert loaded["config"].learner.num_threads == 3


def test_arbitrary_pickled_objects_are_refused(tmp_path):
    path = tmp_path / "evil.pth"
    torch.save({"obj": os.path.join}, str(path))  # a function, not data
    with pytest.raises(CorruptCheckpointError, match="not config records"):
        load_checkpoint_file(str(path))


def test_resume_state_falls_back_to_previous_good_copy(tmp_path):
    files = ResumeStateFiles(str(tmp_path))
    assert files.load() is None
    files.save(_state(1))
    files.save(_state(2))
    assert files.load()["step"] == 2
    with open(files.path, "r+b") as f:
        f.truncate(10)
    assert files.load()["step"] == 1


def test_a_corrupt_newest_copy_is_set_aside_so_the_next_save_keeps_the_good_one(tmp_path):
    # The next save moved the corrupt newest copy over the good previous one:
    # the fallback was gone for the save after.
    files = ResumeStateFiles(str(tmp_path))
    files.save(_state(1))
    files.save(_state(2))
    with open(files.path, "r+b") as f:
        f.truncate(10)
    assert files.load()["step"] == 1
    assert os.path.getsize(files.path + ".corrupt") == 10
    files.save(_state(3))  # the resumed run's next save
    assert load_checkpoint_file(files.previous_path)["step"] == 1
    assert files.load()["step"] == 3


def test_bit_flipped_tensor_data_is_reported_with_its_path(tmp_path):
    path = tmp_path / "ckpt.3.pth"
    save_checkpoint_file(_state(3), str(path))
    _flip_one_bit_of_tensor_data(path, 3)
    # torch itself does not notice: the flipped weight loads as another value.
    flipped = torch.load(str(path), weights_only=True)["state_dict"]["pattern"]
    assert not torch.equal(flipped, _PATTERN + 3)
    with pytest.raises(CorruptCheckpointError, match=r"ckpt\.3\.pth.*checksum"):
        load_checkpoint_file(str(path))


def test_checksum_is_not_part_of_the_loaded_state(tmp_path):
    path = tmp_path / "ckpt.pth"
    save_checkpoint_file(_state(2), str(path))
    assert sorted(load_checkpoint_file(str(path))) == ["config", "state_dict", "step"]


def test_checkpoint_without_checksum_still_loads(tmp_path):
    path = tmp_path / "old.pth"
    torch.save({"state_dict": {"w": torch.ones(2)}, "step": 5}, str(path))
    loaded = load_checkpoint_file(str(path))
    assert loaded["step"] == 5 and torch.equal(loaded["state_dict"]["w"], torch.ones(2))


def test_bit_flipped_resume_state_falls_back_to_previous_copy(tmp_path):
    files = ResumeStateFiles(str(tmp_path))
    files.save(_state(1))
    files.save(_state(2))
    _flip_one_bit_of_tensor_data(tmp_path / "resume-state.pth", 2)
    assert files.load()["step"] == 1


def test_both_resume_state_copies_corrupt_refuses_naming_both_and_the_way_out(tmp_path):
    files = ResumeStateFiles(str(tmp_path))
    files.save(_state(1))
    files.save(_state(2))
    for name in ("resume-state.pth", "resume-state.prev.pth"):
        with open(tmp_path / name, "r+b") as f:
            f.truncate(10)
    with pytest.raises(UnusableResumeStateError) as raised:
        files.load()
    message = str(raised.value)
    assert files.path in message and files.previous_path in message
    assert "delete these files" in message and "checkpoint_folder" in message
    assert isinstance(raised.value, CorruptCheckpointError)  # one-line CLI error


def test_checkpoints_without_a_resume_state_refuse_naming_the_folder(tmp_path):
    for index in range(5):
        save_checkpoint_file(_state(index), str(tmp_path / f"ckpt.{index}.pth"))
    with pytest.raises(CheckpointsWithoutResumeStateError) as raised:
        ResumeStateFiles(str(tmp_path)).load()
    message = str(raised.value)
    assert repr(str(tmp_path)) in message
    assert "ckpt.0.pth, ckpt.1.pth, ckpt.2.pth and 2 more" in message
    assert "checkpoint_folder" in message


def test_a_folder_without_checkpoints_or_resume_state_is_a_fresh_start(tmp_path):
    assert ResumeStateFiles(str(tmp_path / "not-yet-created")).load() is None
    # latest.pth alone, or files that only look alike, are not checkpoints of a run.
    save_checkpoint_file(_state(0), str(tmp_path / "latest.pth"))
    (tmp_path / "ckpt.final.pth").write_bytes(b"x")
    (tmp_path / "ckpt.3.pth.tmp").write_bytes(b"x")
    assert ResumeStateFiles(str(tmp_path)).load() is None
