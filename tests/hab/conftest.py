"""Skill checkpoints written once per session: randomly initialised VERPolicy
skills built from the training configs' own spaces (small LSTM for speed)."""

import gym.spaces as spaces
import numpy as np
import pytest
import torch
from habitat.core.spaces import ActionSpace, EmptySpace
from habitat.gym.gym_wrapper import create_action_space
from habitat_baselines.config.default_structured_configs import HrlDefinedSkillConfig
from habitat_baselines.rl.ppo.policy import PolicyActionData
from omegaconf import OmegaConf

from habitat_ver.common.checkpoint import atomic_torch_save, config_to_plain
from habitat_ver.config.compose import get_config
from habitat_ver.config.hab_validate import action_space_of, observation_space_of
from habitat_ver.policies.ver_policy import VERPolicy
from habitat_ver.skills.nav import VERNavSkill

# The paper's recipe (depth camera), whatever this machine's CUDA, with a small LSTM.
HIDDEN = ["hab_profile=paper", "habitat_baselines.rl.ppo.hidden_size=32"]
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


class AlwaysStop(torch.nn.Module):
    """Stands in for the skill's network: full speed ahead and stop = +1."""

    class net:  # noqa: N801 - the attribute NnSkillPolicy reads
        num_recurrent_layers = 1

    def act(self, observations, rnn_hidden_states, prev_actions, masks, deterministic=False):
        self.seen_goal = observations["goal_to_agent_gps_compass"].clone()
        actions = torch.tensor([[1.0, 0.0, 1.0]]).repeat(masks.shape[0], 1)
        return PolicyActionData(actions=actions, rnn_hidden_states=rnn_hidden_states)


def make_nav_skill(batch_size=1, max_stop_distance=2.0, geodesic=False):
    """A VERNavSkill driven by :class:`AlwaysStop` (base movement and stop)."""
    full = ActionSpace(
        {
            "arm_action": spaces.Dict(
                {"arm_action": spaces.Box(-1, 1, (7,)), "grip_action": spaces.Box(-1, 1, (1,))}
            ),
            "base_velocity": spaces.Dict({"base_vel": spaces.Box(-20, 20, (2,))}),
            "rearrange_stop": EmptySpace(),
        }
    )
    skill_actions = ActionSpace({k: full[k] for k in ("base_velocity", "rearrange_stop")})
    config = OmegaConf.merge(
        OmegaConf.structured(HrlDefinedSkillConfig),
        {
            "skill_name": "VERNavSkill",
            "reset_joint_state": [],
            "skill_data": {"max_stop_distance": max_stop_distance, "geodesic_stop_mask": geodesic},
        },
    )
    box = spaces.Box(np.float32(-1e9), np.float32(1e9), (2,), np.float32)
    obs_space = spaces.Dict({"goal_to_agent_gps_compass": box})
    return VERNavSkill(AlwaysStop(), config, full, obs_space, skill_actions, batch_size)
