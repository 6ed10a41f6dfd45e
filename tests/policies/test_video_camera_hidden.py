"""A video camera added for evaluation changes nothing the policy sees."""

import numpy as np
import pytest
import torch
from gym import spaces
from habitat_baselines.config.default_structured_configs import PolicyConfig
from omegaconf import OmegaConf

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_ver.policies.compact_policy import CompactPolicy
from habitat_ver.policies.ver_policy import VERPolicy

ACTIONS = spaces.Dict({"arm_action": spaces.Box(-1.0, 1.0, (7,), np.float32)})
POLICY_SPACE = {
    "head_depth": spaces.Box(0.0, 1.0, (40, 40, 1), np.float32),
    "joint": spaces.Box(-np.inf, np.inf, (7,), np.float32),
}
WITH_CAMERA = spaces.Dict(
    {**POLICY_SPACE, "third_rgb": spaces.Box(0, 255, (256, 256, 3), np.uint8)}
)


def _gaussian_policy():
    # Upstream's schema: CompactPolicy reads every action_dist key.
    return OmegaConf.structured(PolicyConfig(action_distribution_type="gaussian"))


def _config():
    return OmegaConf.create(
        {
            "habitat": {"simulator": {"agents_order": ["main_agent"]}},
            "habitat_baselines": {
                "eval": {"extra_sim_sensors": {"third_rgb_sensor": {"uuid": "third_rgb"}}},
                "rl": {
                    "ppo": {"hidden_size": 16},
                    "ddppo": {
                        "backbone": "resnet18",
                        "rnn_type": "LSTM",
                        "num_recurrent_layers": 1,
                    },
                    "policy": {"main_agent": _gaussian_policy()},
                },
                "ver_policy": {"base_planes": 8, "ngroups": 4, "dilations": [1, 1]},
            },
        }
    )


@pytest.mark.parametrize("cls", [VERPolicy, CompactPolicy])
def test_the_same_network_with_and_without_the_video_camera(cls):
    torch.manual_seed(0)
    seen = cls.from_config(_config(), WITH_CAMERA, ACTIONS, agent_name="main_agent")
    torch.manual_seed(0)
    plain = cls.from_config(_config(), spaces.Dict(POLICY_SPACE), ACTIONS, agent_name="main_agent")
    shapes = {k: tuple(v.shape) for k, v in seen.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in plain.state_dict().items()}
    # And it acts on a batch holding the camera, ignoring it.
    batch = {k: torch.rand(2, *s.shape) for k, s in WITH_CAMERA.spaces.items()}
    hidden = torch.zeros(2, *seen.hidden_state_shape)
    out = seen.act(batch, hidden, torch.zeros(2, 7), torch.ones(2, 1, dtype=torch.bool))
    assert out.actions.shape == (2, 7)
