"""CompactPolicy: its image encoder (RGB uint8, habitat's float depth), the
observations it reads and the inputs it refuses."""

import numpy as np
import pytest
import torch
from gym import spaces
from omegaconf import OmegaConf

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_ver.config.errors import ConfigError
from habitat_ver.policies.compact_policy import MIN_IMAGE_SIZE, CompactPolicy, _SmallCNN


def test_float_depth_is_not_rescaled_like_uint8_rgb():
    # habitat's depth sensor gives float32 in [0, 1] (normalize_depth), RGB
    # uint8 in [0, 255]: the same picture in both forms must encode the same.
    torch.manual_seed(0)
    cnn = _SmallCNN(64, 64, 1, 16)
    as_uint8 = torch.randint(0, 256, (3, 64, 64, 1), dtype=torch.uint8)
    as_float = as_uint8.float() / 255.0
    torch.testing.assert_close(cnn(as_float), cnn(as_uint8))


def _box(*shape):
    return spaces.Box(-1.0, 1.0, shape, np.float32)


def test_every_box_but_images_reaches_the_mlp_flattened():
    # A 5x5 grid used to be dropped without a word: the policy saw `pos` only.
    obs = spaces.Dict({"pos": _box(2), "grid": _box(5, 5)})
    policy = CompactPolicy(obs, spaces.Discrete(2), hidden_size=8)
    assert policy.net.mlp[0].in_features == 2 + 25
    batch = {"pos": torch.zeros(3, 2), "grid": torch.ones(3, 5, 5)}
    hidden = torch.zeros(3, 1, 8)
    masks = torch.ones(3, 1, dtype=torch.bool)
    features, _, _ = policy.net(batch, hidden, torch.zeros(3, 1), masks)
    assert features.shape == (3, 8)


def test_a_non_box_observation_is_named():
    obs = spaces.Dict({"pos": _box(2), "count": spaces.Discrete(3)})
    with pytest.raises(ConfigError, match=r"'count' is Discrete\(3\)"):
        CompactPolicy(obs, spaces.Discrete(2))


def test_an_image_too_small_for_the_cnn_is_named_with_the_minimum():
    side = MIN_IMAGE_SIZE - 1
    obs = spaces.Dict({"depth": _box(side, 64, 1)})
    with pytest.raises(ConfigError, match=rf"'depth' is {side}x64.*at least 36x36"):
        CompactPolicy(obs, spaces.Discrete(2))
    CompactPolicy(spaces.Dict({"depth": _box(36, 36, 1)}), spaces.Discrete(2))  # the minimum


def test_a_categorical_head_over_continuous_actions_is_refused():
    # Upstream's categorical head over a Box sends action 0 for ever.
    obs, actions = spaces.Dict({"pos": _box(2)}), _box(1)
    categorical = OmegaConf.create({"action_distribution_type": "categorical"})
    with pytest.raises(ConfigError, match="action_distribution_type='categorical'.*'gaussian'"):
        CompactPolicy(obs, actions, policy_config=categorical)
    gaussian = OmegaConf.create(
        {
            "action_distribution_type": "gaussian",
            "action_dist": {
                "use_log_std": True,
                "use_softplus": False,
                "std_init": -1.0,
                "log_std_init": 0.0,
                "use_std_param": False,
                "clamp_std": True,
                "min_std": 1e-6,
                "max_std": 1,
                "min_log_std": -5,
                "max_log_std": 2,
                "action_activation": "tanh",
                "scheduled_std": False,
            },
        }
    )
    assert (
        CompactPolicy(obs, actions, policy_config=gaussian).action_distribution_type == "gaussian"
    )
