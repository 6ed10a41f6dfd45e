"""Knobs of :class:`~habitat_ver.policies.ver_policy.VERPolicy` upstream lacks.

Read from ``habitat_baselines.ver_policy``, the config section this dataclass
is registered as (:mod:`habitat_ver.registration`); when the section is absent
(an upstream-schema config) these defaults apply. The recurrent core's type,
depth and width and the backbone name are upstream's keys
(``rl.ddppo.rnn_type``, ``rl.ddppo.num_recurrent_layers``,
``rl.ppo.hidden_size``, ``rl.ddppo.backbone``) and are not repeated here.
"""

from dataclasses import dataclass, field
from typing import List, Optional


@dataclass
class VERPolicyConfig:
    """Visual encoder and input embedding sizes of VERPolicy."""

    # Width (channels) of the encoder's first stage; 32 = ResNet18 at half width.
    base_planes: int = 32
    # GroupNorm groups in every encoder layer (habitat's base_planes // 2).
    ngroups: int = 16
    # Dilation of block i's first 3x3 convolution in every stage (one per block).
    dilations: List[int] = field(default_factory=lambda: [1, 2])
    # Initial layer-scale gamma of every residual branch (CaiT's 0.1 for depth <= 18).
    layer_scale_init: float = 0.1
    # Size of the visual embedding fed to the LSTM (features); None = rl.ppo.hidden_size.
    visual_embedding_size: Optional[int] = None
    # Size of the previous-action embedding per action part (features).
    prev_action_embedding_size: int = 32
    # Image observation keys ([H, W, C] Boxes); None = every 3-D Box observation.
    visual_keys: Optional[List[str]] = None
    # Vector observation keys (1-D Boxes, fed raw); None = every 1-D Box observation.
    vector_keys: Optional[List[str]] = None
