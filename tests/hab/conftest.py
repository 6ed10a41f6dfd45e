"""Skill checkpoints written once per session: randomly initialised VERPolicy
skills built from the training configs' own spaces (small LSTM for speed)."""

import pytest
import torch
from habitat.gym.gym_wrapper import create_action_space

from habitat_ver.common.checkpoint import atomic_torch_save, config_to_plain
from habitat_ver.config.compose import get_config
from habitat_ver.config.hab_validate import action_space_of, observation_space_of
from habitat_ver.policies.ver_policy import VERPolicy

HIDDEN = ["habitat_baselines.rl.ppo.hidden_size=32"]
SKILLS = ("pick", "place", "nav_to_obj")


def write_skill_checkpoint(name: str, path) -> None:
    config = get_config(f"rearrange/ver_{name}", HIDDEN)
    policy = VERPolicy.from_config(
        config, observation_space_of(config), create_action_space(action_space_of(config))
    )
    atomic_torch_save(
        {"state_dict": policy.state_dict(), "config": config_to_plain(config)}, str(path)
    )


@pytest.fixture(scope="session")
def skill_checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("skills")
    torch.manual_seed(0)
    paths = {}
    for name in SKILLS:
        paths[name] = folder / f"{name}.pth"
        write_skill_checkpoint(name, paths[name])
    return paths


def hab_overrides(paths) -> list:
    return HIDDEN + [f"hab_skill_checkpoints.{k}={v}" for k, v in paths.items()]
