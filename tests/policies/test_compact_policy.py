"""CompactPolicy's image encoder: RGB (uint8) and habitat's depth (float)."""

import torch

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_ver.policies.compact_policy import _SmallCNN


def test_float_depth_is_not_rescaled_like_uint8_rgb():
    # habitat's depth sensor gives float32 in [0, 1] (normalize_depth), RGB
    # uint8 in [0, 255]: the same picture in both forms must encode the same.
    torch.manual_seed(0)
    cnn = _SmallCNN(64, 64, 1, 16)
    as_uint8 = torch.randint(0, 256, (3, 64, 64, 1), dtype=torch.uint8)
    as_float = as_uint8.float() / 255.0
    torch.testing.assert_close(cnn(as_float), cnn(as_uint8))
