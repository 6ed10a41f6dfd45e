"""Shapes, sizes, parameter counts and gradients of the VER visual encoder."""

import numpy as np
import pytest
import torch

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
import torchvision
from gym import spaces
from habitat_baselines.rl.ddppo.policy import resnet
from torch import nn

from habitat_ver.policies.visual_encoder import (
    ConvNeXtBasicBlock,
    ConvNeXtResNet,
    LayerScale,
    VisualEncoder,
)

from .conftest import random_obs


def _space(size=128, depth=True, rgb=False):
    d = {}
    if depth:
        d["depth"] = spaces.Box(0.0, 1.0, (size, size, 1), np.float32)
    if rgb:
        d["rgb"] = spaces.Box(0, 255, (size, size, 3), np.uint8)
    return spaces.Dict(d)


def _count(module):
    return sum(p.numel() for p in module.parameters())


def _half_width_resnet18_reference(in_channels):
    """Half-width ResNet18 backbone count, derived from torchvision's resnet18.

    Every convolution's in/out channels are halved (the stem's input becomes
    ``in_channels``); every BatchNorm(C) becomes GroupNorm(C/2) (2 * C/2
    parameters); the classifier is dropped. Then the ConvNeXt changes:
    stem 7x7 -> 4x4 patchify conv with bias + GroupNorm; in each of the three
    stage transitions (w -> 2w) the strided 3x3 w->2w conv and the 1x1
    projection (+ its norm) are replaced by GroupNorm(w) + a 2x2 w->2w conv
    with bias, and the first block's conv becomes 2w->2w; plus one layer-scale
    vector (C) per block.
    """
    tv = torchvision.models.resnet18(weights=None)
    base = 0
    for name, m in tv.named_modules():
        if isinstance(m, nn.Conv2d):
            cin = in_channels if name == "conv1" else m.in_channels // 2
            base += m.kernel_size[0] * m.kernel_size[1] * cin * (m.out_channels // 2)
        elif isinstance(m, nn.BatchNorm2d):
            base += 2 * (m.num_features // 2)
    changed = base
    changed += (16 - 49) * in_channels * 32 + 32  # patchify stem + bias
    for w in (32, 64, 128):
        changed -= 9 * w * 2 * w + w * 2 * w + 2 * 2 * w  # strided conv, 1x1, norm
        changed += 2 * w + 4 * w * 2 * w + 2 * w  # GN(w), 2x2 conv + bias
        changed += 9 * 2 * w * 2 * w  # first block conv is now 2w -> 2w
    changed += 2 * (32 + 64 + 128 + 256)  # layer scale, 2 blocks per stage
    return base, changed


@pytest.mark.parametrize("depth,rgb,channels", [(True, False, 1), (True, True, 4)])
def test_output_shape_and_parameter_count_128(depth, rgb, channels):
    space = _space(128, depth=depth, rgb=rgb)
    enc = VisualEncoder(space, list(space.spaces))
    out = enc(random_obs(space))
    # 128 -> 4x4 after the backbone; 2048 / 16 = 128 compressed channels.
    assert enc.output_shape == (128, 4, 4)
    assert out.shape == (2, 2048)
    plain, reference = _half_width_resnet18_reference(channels)
    # Cross-check: habitat-baselines' own half-width GroupNorm ResNet18.
    assert plain == _count(resnet.resnet18(channels, 32, 16))
    ours = _count(enc.backbone)
    print(
        f"in_channels={channels}: half-width ResNet18 {plain}, "
        f"+ConvNeXt changes {reference}, ours {ours}, total {_count(enc)}"
    )
    assert abs(ours - reference) <= 0.10 * reference
    # The ConvNeXt changes add about a fifth to the plain half-width count.
    assert 1.0 < ours / plain < 1.3


def test_layer_scale_starts_at_configured_init():
    space = _space(64)
    enc = VisualEncoder(space, ["depth"], layer_scale_init=0.25)
    scales = [m for m in enc.modules() if isinstance(m, LayerScale)]
    assert len(scales) == 8  # 4 stages x 2 blocks
    for s in scales:
        assert torch.equal(s.gamma, torch.full_like(s.gamma, 0.25))


def test_layer_scale_zero_makes_blocks_identity_plus_relu():
    block = ConvNeXtBasicBlock(8, 4, dilation=2, layer_scale_init=0.0)
    x = torch.randn(2, 8, 6, 6)
    torch.testing.assert_close(block(x), torch.relu(x))


@pytest.mark.parametrize(
    "size,expected",
    [
        (128, [32, 32, 16, 8, 4]),
        (96, [24, 24, 12, 6, 3]),
        (100, [25, 25, 12, 6, 3]),  # each stride-2 downsampling floors
        (32, [8, 8, 4, 2, 1]),
    ],
)
def test_documented_spatial_sizes(size, expected):
    net = ConvNeXtResNet(1, base_planes=8, ngroups=4)
    outs = net.stage_outputs(torch.rand(1, 1, size, size))
    assert [o.shape[-1] for o in outs] == expected
    assert [o.shape[1] for o in outs] == [8, 8, 16, 32, 64]


def test_dilated_convolutions_are_where_documented_and_keep_size():
    net = ConvNeXtResNet(1, base_planes=8, ngroups=4, dilations=(1, 3))
    for stage in net.stages:
        first, second = stage[0].branch[0], stage[1].branch[0]
        assert first.dilation == (1, 1) and second.dilation == (3, 3)
        assert second.padding == (3, 3)
    x = torch.randn(1, 8, 9, 9)
    assert net.stages[0][1](x).shape == x.shape


def test_non_square_input():
    space = spaces.Dict({"depth": spaces.Box(0.0, 1.0, (64, 96, 1), np.float32)})
    enc = VisualEncoder(space, ["depth"], base_planes=8, ngroups=4)
    # backbone 2x3 -> round(2048 / 6) = 341 channels
    assert enc.output_shape == (341, 2, 3)
    assert enc(random_obs(space)).shape == (2, 341 * 6)


def test_too_small_or_mismatched_images_are_refused():
    with pytest.raises(ValueError, match="at least 32x32"):
        VisualEncoder(_space(16), ["depth"])
    space = spaces.Dict(
        {
            "depth": spaces.Box(0.0, 1.0, (64, 64, 1), np.float32),
            "rgb": spaces.Box(0, 255, (32, 32, 3), np.uint8),
        }
    )
    with pytest.raises(ValueError, match="at one size"):
        VisualEncoder(space, ["depth", "rgb"])


def test_inputs_normalised_in_one_place():
    space = _space(32, depth=True, rgb=True)
    enc = VisualEncoder(space, ["rgb", "depth"], base_planes=8, ngroups=4)
    obs = {
        "rgb": torch.full((1, 32, 32, 3), 255, dtype=torch.uint8),
        "depth": torch.full((1, 32, 32, 1), 0.5),
    }
    x = enc.stack_inputs(obs)
    assert x.shape == (1, 4, 32, 32)
    torch.testing.assert_close(x[:, :3], torch.ones(1, 3, 32, 32))  # 255 / 255
    torch.testing.assert_close(x[:, 3], torch.full((1, 32, 32), 0.5))  # as-is


def test_gradients_reach_every_parameter():
    space = _space(32, depth=True, rgb=True)
    enc = VisualEncoder(space, ["depth", "rgb"], base_planes=8, ngroups=4)
    enc(random_obs(space, batch=3)).square().sum().backward()
    for name, p in enc.named_parameters():
        assert p.grad is not None, name
        assert p.grad.abs().sum() > 0, name


def test_channels_last_gives_same_output():
    space = _space(32)
    enc = VisualEncoder(space, ["depth"], base_planes=8, ngroups=4)
    obs = random_obs(space)
    expected = enc(obs)
    enc.use_channels_last()
    torch.testing.assert_close(enc(obs), expected, rtol=1e-4, atol=1e-5)
