"""The VER paper's visual encoder: a ConvNeXt-style half-width ResNet18.

VER paper section 4 ("Architecture"): ResNet18 at half width with GroupNorm
(as DD-PPO, appendix C), plus four ConvNeXt changes (Liu et al., 2022):

* **patchify stem**: one ``4x4`` convolution with stride 4 (+ GroupNorm)
  replaces ResNet's ``7x7/2`` convolution and ``3x3/2`` max-pool;
* **dedicated downsampling stages**: between two stages, GroupNorm and a
  ``2x2`` convolution with stride 2 change resolution and width, so every
  residual block keeps its shape and has an identity shortcut (ResNet instead
  strides the first block of a stage and adds a ``1x1`` projection);
* **layer scale** (Touvron et al., 2021): each residual branch is multiplied
  by a learned per-channel ``gamma`` before the addition;
* **dilated convolutions** (Yu and Koltun, 2015): the first ``3x3``
  convolution of selected blocks is dilated, widening the receptive field
  like a larger kernel at the cost of a ``3x3`` one.

Spatial sizes, for an ``H x W`` input: stem ``floor(H/4)``; stage ``s``
(``s = 1..4``) ``floor(H / 4 / 2**(s-1))`` (each downsampling floors); a
``128x128`` input gives ``32, 32, 16, 8, 4``. Dilated convolutions are padded
by their dilation, so they never change the size. Inputs smaller than
``32x32`` leave nothing for the last stage and are refused.

After the backbone, as DD-PPO (appendix C), a ``3x3`` convolution compresses
the ``8 * base_planes`` channels to ``round(2048 / (h * w))`` so the flattened
output has about 2048 features whatever the input size.

Input normalisation happens in exactly one place,
:meth:`VisualEncoder.stack_inputs`: ``uint8`` images (RGB) are divided by 255,
float images (depth, already in ``[0, 1]`` from habitat's depth sensors) are
used as they are; all image keys are concatenated along channels.
"""

from typing import Dict, List, Sequence, Tuple

import torch
from torch import Tensor, nn

from habitat_ver.config.errors import ConfigError

__all__ = ["LayerScale", "ConvNeXtBasicBlock", "ConvNeXtResNet", "VisualEncoder"]

# Features the flattened compression output aims at (DD-PPO: 128 x 4 x 4).
_COMPRESSED_FEATURES = 2048
# The backbone reduces resolution by 4 (stem) * 2**3 (three downsamplings).
_TOTAL_STRIDE = 32


class LayerScale(nn.Module):
    """Per-channel learned scale of a residual branch (Touvron et al., 2021).

    Args:
        channels: number of channels ``C``.
        init: initial value of every scale.

    Shapes:
        input/output: ``[B, C, H, W]``.
    """

    def __init__(self, channels: int, init: float):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((channels,), float(init)))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.gamma.view(1, -1, 1, 1)


class ConvNeXtBasicBlock(nn.Module):
    """ResNet's basic block with a layer-scaled branch and optional dilation.

    ``relu(x + gamma * GN(conv3x3(relu(GN(conv3x3_dilated(x))))))``; shape
    preserving, so the shortcut is the identity.

    Args:
        channels: input and output channels.
        ngroups: GroupNorm groups.
        dilation: dilation (and padding) of the first ``3x3`` convolution.
        layer_scale_init: initial ``gamma``.
    """

    def __init__(self, channels: int, ngroups: int, dilation: int, layer_scale_init: float):
        super().__init__()
        self.branch = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=dilation, dilation=dilation, bias=False),
            nn.GroupNorm(ngroups, channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1, bias=False),
            nn.GroupNorm(ngroups, channels),
            LayerScale(channels, layer_scale_init),
        )
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        return self.relu(x + self.branch(x))


class ConvNeXtResNet(nn.Module):
    """Half-width ResNet18 layout (2 blocks x 4 stages) with ConvNeXt changes.

    Args:
        in_channels: image channels (1 for depth, 3 for RGB, 4 for RGB-D).
        base_planes: width of the first stage; 32 is ResNet18 at half width.
        ngroups: GroupNorm groups in every layer (16 at half width, as
            habitat-baselines' ``ngroups = base_planes // 2``).
        blocks_per_stage: residual blocks in each of the four stages.
        dilations: dilation of block ``i`` of every stage (length
            ``blocks_per_stage``); the default dilates the second block.
        layer_scale_init: initial layer-scale ``gamma``; 0.1 is CaiT's value
            for networks of depth 18 or less (Touvron et al., 2021).

    Shapes:
        input: ``[B, in_channels, H, W]``, ``H, W >= 32``.
        output: ``[B, 8 * base_planes, floor(H/32), floor(W/32)]`` (for sizes
            divisible by 32; see the module docstring for flooring).
    """

    def __init__(
        self,
        in_channels: int,
        base_planes: int = 32,
        ngroups: int = 16,
        blocks_per_stage: int = 2,
        dilations: Sequence[int] = (1, 2),
        layer_scale_init: float = 0.1,
    ):
        super().__init__()
        if len(dilations) != blocks_per_stage:
            raise ValueError(
                f"dilations={list(dilations)} must give one dilation per block "
                f"(blocks_per_stage={blocks_per_stage})"
            )
        widths = [base_planes * 2**s for s in range(4)]
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, widths[0], 4, stride=4),
            nn.GroupNorm(ngroups, widths[0]),
        )
        self.downsamples = nn.ModuleList(
            nn.Sequential(
                nn.GroupNorm(ngroups, w_in),
                nn.Conv2d(w_in, w_out, 2, stride=2),
            )
            for w_in, w_out in zip(widths[:-1], widths[1:])
        )
        self.stages = nn.ModuleList(
            nn.Sequential(*(ConvNeXtBasicBlock(w, ngroups, d, layer_scale_init) for d in dilations))
            for w in widths
        )
        self.out_channels = widths[-1]

    def stage_outputs(self, x: Tensor) -> List[Tensor]:
        """Output of the stem and of each stage, in order (for inspection)."""
        outs = [self.stem(x)]
        x = self.stages[0](outs[0])
        outs.append(x)
        for down, stage in zip(self.downsamples, self.stages[1:]):
            x = stage(down(x))
            outs.append(x)
        return outs

    def forward(self, x: Tensor) -> Tensor:
        x = self.stages[0](self.stem(x))
        for down, stage in zip(self.downsamples, self.stages[1:]):
            x = stage(down(x))
        return x


def _image_shape(observation_space, keys: Sequence[str]) -> Tuple[int, int, int]:
    """``(H, W, total channels)`` of the image keys; all must share H and W."""
    sizes = {tuple(observation_space.spaces[k].shape[:2]) for k in keys}
    if len(sizes) != 1:
        raise ValueError(
            f"VisualEncoder needs every image key {list(keys)} at one size; got {sorted(sizes)}"
        )
    ((height, width),) = sizes
    channels = sum(observation_space.spaces[k].shape[2] for k in keys)
    return height, width, channels


class VisualEncoder(nn.Module):
    """Images of an observation dict -> backbone -> compressed feature map.

    Args:
        observation_space: gym ``Dict`` space holding ``keys``.
        keys: observation keys of ``[H, W, C]`` images, concatenated along
            channels in this order.
        base_planes, ngroups, dilations, layer_scale_init: see
            :class:`ConvNeXtResNet`.

    Shapes:
        observations[k]: ``[B, H, W, C_k]`` (habitat's channels-last layout).
        output: ``[B, output_size]``.
    """

    def __init__(
        self,
        observation_space,
        keys: Sequence[str],
        base_planes: int = 32,
        ngroups: int = 16,
        dilations: Sequence[int] = (1, 2),
        layer_scale_init: float = 0.1,
    ):
        super().__init__()
        if not keys:
            raise ValueError("VisualEncoder needs at least one image key")
        self.keys = list(keys)
        height, width, channels = _image_shape(observation_space, self.keys)
        if min(height, width) < _TOTAL_STRIDE:
            raise ConfigError(
                f"images {self.keys} are {height}x{width}; the encoder "
                f"downsamples by {_TOTAL_STRIDE} and needs at least "
                f"{_TOTAL_STRIDE}x{_TOTAL_STRIDE}"
            )
        self.backbone = ConvNeXtResNet(
            channels,
            base_planes,
            ngroups,
            len(dilations),
            dilations,
            layer_scale_init,
        )
        h, w = self._backbone_size(height, width)
        compressed = max(1, round(_COMPRESSED_FEATURES / (h * w)))
        self.compression = nn.Sequential(
            nn.Conv2d(self.backbone.out_channels, compressed, 3, padding=1, bias=False),
            nn.GroupNorm(1, compressed),
            nn.ReLU(inplace=True),
        )
        self.output_shape = (compressed, h, w)
        self._memory_format = torch.contiguous_format
        self.output_size = compressed * h * w

    @staticmethod
    def _backbone_size(height: int, width: int) -> Tuple[int, int]:
        h, w = height // 4, width // 4
        for _ in range(3):
            h, w = h // 2, w // 2
        return h, w

    def stack_inputs(self, observations: Dict[str, Tensor]) -> Tensor:
        """The one place inputs are normalised: ``[B,H,W,C]`` -> float NCHW.

        ``uint8`` images (RGB) are scaled by 1/255 into ``[0, 1]``; float
        images (depth) are taken as they are, since habitat's depth sensors
        already normalise to ``[0, 1]``.
        """
        parts = []
        for k in self.keys:
            x = observations[k]
            x = x.float() / 255.0 if x.dtype == torch.uint8 else x.float()
            parts.append(x)
        return torch.cat(parts, dim=-1).permute(0, 3, 1, 2)

    def forward(self, observations: Dict[str, Tensor]) -> Tensor:
        x = self.stack_inputs(observations).contiguous(memory_format=self._memory_format)
        return self.compression(self.backbone(x)).flatten(1)

    def use_channels_last(self) -> "VisualEncoder":
        """Store weights and feed inputs as NHWC (faster convolutions on GPU)."""
        self._memory_format = torch.channels_last
        return self.to(memory_format=torch.channels_last)
