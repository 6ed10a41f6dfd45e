"""Shipping a trained skill checkpoint (habitat_ver/tools/ship_skill.py)."""

import json

import pytest
import torch

from habitat_ver.common.checkpoint import (
    config_to_plain,
    load_checkpoint_file,
    save_checkpoint_file,
)
from habitat_ver.config import shipped_skills
from habitat_ver.config.compose import get_config
from habitat_ver.config.hab_profile import resolved_profile
from habitat_ver.tools import ship_skill


@pytest.fixture
def shipped_dir(tmp_path, monkeypatch):
    folder = tmp_path / "skill_checkpoints"
    folder.mkdir()
    monkeypatch.setattr(shipped_skills, "SHIPPED_DIR", str(folder))
    monkeypatch.setattr(ship_skill, "SHIPPED_DIR", str(folder))
    return folder


def _training_checkpoint(path, overrides=()):
    config = resolved_profile(
        get_config("rearrange/ver_close_cab", ["hab_profile=cpu", *overrides])
    )
    state = {
        "state_dict": {"w": torch.arange(6.0).reshape(2, 3)},
        "optim_state": {"lots": torch.zeros(1000)},
        "config": config_to_plain(config),
        "extra_state": {"step": 4096, "wall_time": 12.5},
    }
    save_checkpoint_file(state, str(path))


def _result(path, **more):
    """A hab_skill_learning result record at ``path``, with ``more`` fields."""
    record = {
        "config": "rearrange/ver_close_cab",
        "git_sha": "abc123",  # the evaluation's code
        "date": "2026-11-29T01:00:00",
        "episodes": 20,
        "train": {"wall_s": 1500.0, "commit": "def456"},
        "untrained": {"metrics": {"art_obj_success": 0.0, "num_steps": 200.0}},
        "trained": {"metrics": {"art_obj_success": 0.35, "art_obj_reward": 3.1}},
        **more,
    }
    path.write_text(json.dumps(record))


def _ship(tmp_path, **more):
    """Ship a close-drawer training checkpoint with a result record holding ``more``."""
    source, result = tmp_path / "ckpt.3.pth", tmp_path / "result.json"
    _training_checkpoint(source)
    _result(result, **more)
    return source, ship_skill.ship("close_cab", str(source), str(result))


def test_the_shipped_file_keeps_the_weights_and_config_and_says_where_it_came_from(
    tmp_path, shipped_dir
):
    source, entry = _ship(tmp_path)

    shipped = load_checkpoint_file(str(shipped_dir / "close_cab.pth"))
    assert sorted(shipped) == ["config", "extra_state", "state_dict"]
    assert torch.equal(shipped["state_dict"]["w"], torch.arange(6.0).reshape(2, 3))
    assert shipped["extra_state"] == {"step": 4096}
    assert entry["bytes"] == (shipped_dir / "close_cab.pth").stat().st_size
    assert entry["bytes"] < source.stat().st_size  # no optimizer state
    assert (entry["task"], entry["hidden_size"], entry["steps"]) == (
        "RearrangeCloseDrawerTask-v0",
        128,
        4096,
    )
    assert entry["obs_keys"][0] == "marker_rel_pos" and "head_depth" not in entry["obs_keys"]
    assert (entry["val_success_untrained"], entry["val_success_trained"]) == (0.0, 0.35)
    # The commit the weights were trained with, not the evaluation's.
    assert (entry["commit"], entry["val_episodes"]) == ("def456", 20)
    assert entry["val_evals_per_episode"] == 1
    assert "started_from" not in entry
    assert shipped_skills.provenance() == {"close_cab": entry}


def test_a_skill_trained_on_episodes_elsewhere_reads_the_generated_datas_once_shipped(
    tmp_path, shipped_dir
):
    source = tmp_path / "ckpt.3.pth"
    _training_checkpoint(source, ["hab_data=generated", "hab_data.episodes=/elsewhere/v1"])
    trained = load_checkpoint_file(str(source))["config"]
    assert trained["habitat"]["dataset"]["data_path"].startswith("/elsewhere/v1/")
    ship_skill.ship("close_cab", str(source), None)
    shipped = load_checkpoint_file(str(shipped_dir / "close_cab.pth"))["config"]
    # Where the config tree puts the generated data's episode file.
    generated = get_config("rearrange/ver_close_cab", ["hab_data=generated"])
    assert shipped["habitat"]["dataset"]["data_path"] == generated.habitat.dataset.data_path


def test_a_skill_trained_on_from_another_run_names_it_and_the_steps_of_both(tmp_path, shipped_dir):
    init_from = {
        "checkpoint": "/runs/close_cab/ckpt/ckpt.157.pth",
        "step": 808960,
        "config": "rearrange/ver_close_cab",
    }
    overrides = [
        "hab_profile=cpu",
        "habitat.task.measurements.art_obj_reward.ee_dist_reward=10.0",
        "habitat_baselines.rl.ddppo.pretrained=True",
        "habitat_baselines.rl.ddppo.pretrained_weights=/runs/fine/init_weights.pth",
        "habitat_baselines.checkpoint_folder=/runs/fine/ckpt",
        "habitat_baselines.total_num_steps=1000000000",
    ]
    _, entry = _ship(tmp_path, init_from=init_from, overrides=overrides)
    assert entry["started_from"] == {"config": "rearrange/ver_close_cab", "steps": 808960}
    assert entry["steps_in_all"] == 808960 + 4096
    # what it trained with, not where its files went
    assert entry["overrides"] == [
        "hab_profile=cpu",
        "habitat.task.measurements.art_obj_reward.ee_dist_reward=10.0",
    ]


def test_a_skill_of_a_third_stage_counts_the_steps_of_every_stage(tmp_path, shipped_dir):
    # its weights came from a second stage's step 220,160, which had started
    # from a first stage's step 547,840
    init_from = {
        "checkpoint": "/runs/second/ckpt/ckpt.42.pth",
        "step": 220160,
        "config": "rearrange/ver_close_cab",
        "steps_in_all": 547840 + 220160,
    }
    _, entry = _ship(tmp_path, init_from=init_from)
    assert entry["started_from"] == {"config": "rearrange/ver_close_cab", "steps": 768000}
    assert entry["steps_in_all"] == 768000 + 4096


def test_the_cpu_profile_reads_a_shipped_skill_and_the_users_own_run_of_the_others(
    shipped_dir,
):
    (shipped_dir / "close_cab.pth").write_bytes(b"")
    own = "outputs/rearrange/ver_{}/checkpoints/latest.pth"
    config = get_config("hab/tidy_house_nonav", ["hab_profile=cpu"])
    assert config.hab_skill_checkpoints.close_cab == str(shipped_dir / "close_cab.pth")
    assert config.hab_skill_checkpoints.open_cab == own.format("open_cab")
    paper = get_config("hab/tidy_house_nonav", ["hab_profile=paper"])
    assert paper.hab_skill_checkpoints.close_cab == own.format("close_cab")


@pytest.mark.parametrize(
    "metrics, expected",
    [
        ({"pick_success": 0.5, "num_steps": 3.0}, 0.5),
        ({"art_obj_success": 0.0}, 0.0),
        ({"reward": 1.0}, None),
        ({"pick_success": 0.5, "place_success": 0.1}, None),  # ambiguous
    ],
)
def test_success_is_the_one_success_metric(metrics, expected):
    assert ship_skill.success_of(metrics) == expected
