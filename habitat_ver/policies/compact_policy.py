"""A small actor-critic for the embedded environments (CartPole, ViZDoom).

Vector observations (every Box but images, flattened) go through an MLP,
images (HxWxC Boxes, at least 36x36) through a three-layer CNN (the Atari
"Nature" layout scaled to small screens); the embeddings are concatenated and
fed to an optional recurrent core (GRU/LSTM from habitat-baselines, or none)
and then to habitat's categorical/Gaussian head and critic.  It follows
habitat-baselines' ``NetPolicy`` contract, so every trainer and the upstream
evaluator use it unchanged.

Config keys (all upstream's): ``rl.ppo.hidden_size`` (width of every layer),
``rl.ddppo.rnn_type`` (``GRU``, ``LSTM`` or ``none``),
``rl.ddppo.num_recurrent_layers`` and ``rl.auxiliary_losses`` (upstream's
auxiliary losses, e.g. CPC|A: the net gives them the images' embedding as
``perception_embed`` and its output as ``rnn_output``).
"""

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

import numpy as np
import torch
from gym import spaces
from torch import nn

from habitat_baselines.rl.models.rnn_state_encoder import build_rnn_state_encoder
from habitat_baselines.rl.ppo.policy import Net, NetPolicy

from habitat_ver.config.aux_losses import check_aux_losses_fit
from habitat_ver.config.errors import ConfigError
from habitat_ver.policies.agent_config import agent_policy_config, policy_observation_space

if TYPE_CHECKING:
    from omegaconf import DictConfig

RNN_TYPES = ("gru", "lstm", "none")


# The CNN's 8/4, 4/2 and 3/1 convolutions leave nothing of a smaller image.
MIN_IMAGE_SIZE = 36


def _image_keys(observation_space: spaces.Dict) -> List[str]:
    return [
        k
        for k, s in observation_space.spaces.items()
        if isinstance(s, spaces.Box) and len(s.shape) == 3
    ]


def _vector_keys(observation_space: spaces.Dict) -> List[str]:
    """Every other Box, flattened (a 2-D grid too); other spaces are refused."""
    keys = []
    for k, s in observation_space.spaces.items():
        if not isinstance(s, spaces.Box):
            raise ConfigError(
                f"CompactPolicy reads Box observations only; {k!r} is {s}. Give "
                "it to the policy as a Box (e.g. a one-hot or the index as a float)"
            )
        if len(s.shape) != 3:
            keys.append(k)
    return keys


class _SmallCNN(nn.Module):
    """Conv 8x8/4, 4x4/2, 3x3/1 then a linear layer.

    Input: HxWxC uint8 in [0, 255] or float in [0, 1].
    """

    def __init__(self, height: int, width: int, channels: int, out_size: int):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(channels, 32, 8, stride=4),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 4, stride=2),
            nn.ReLU(inplace=True),
            nn.Conv2d(64, 64, 3, stride=1),
            nn.ReLU(inplace=True),
            nn.Flatten(),
        )
        with torch.no_grad():
            flat = self.conv(torch.zeros(1, channels, height, width)).shape[1]
        self.fc = nn.Sequential(nn.Linear(flat, out_size), nn.ReLU(inplace=True))

    @classmethod
    def for_space(cls, key: str, space: spaces.Box, out_size: int) -> "_SmallCNN":
        """The CNN for the HWC image space of observation ``key``."""
        height, width, channels = space.shape
        if min(height, width) < MIN_IMAGE_SIZE:
            raise ConfigError(
                f"image observation {key!r} is {height}x{width}; CompactPolicy's "
                f"CNN needs at least {MIN_IMAGE_SIZE}x{MIN_IMAGE_SIZE} (set the "
                "sensor's width and height, or use VERPolicy, which takes 32x32)"
            )
        return cls(height, width, channels, out_size)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        # HWC batches from the env -> float NCHW in [0, 1], in one place:
        # uint8 images (RGB) are scaled, float ones (habitat's normalised
        # depth) already are in [0, 1].
        x = images.permute(0, 3, 1, 2).float()
        if images.dtype == torch.uint8:
            x = x / 255.0
        return self.fc(self.conv(x))


class CompactNet(Net):
    """Encoder + recurrent core; see the module docstring."""

    def __init__(
        self,
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        hidden_size: int,
        rnn_type: str,
        num_recurrent_layers: int,
    ):
        super().__init__()
        rnn_type = rnn_type.lower()
        if rnn_type not in RNN_TYPES:
            raise ValueError(
                f"habitat_baselines.rl.ddppo.rnn_type={rnn_type!r} is not "
                f"supported by CompactPolicy; allowed: GRU, LSTM, none"
            )
        self._image_keys = _image_keys(observation_space)
        self._vector_keys = _vector_keys(observation_space)
        if not self._image_keys and not self._vector_keys:
            raise ConfigError(
                f"CompactPolicy needs at least one Box observation; got {observation_space}"
            )
        self._hidden_size = hidden_size
        self.cnns = nn.ModuleDict(
            {
                k: _SmallCNN.for_space(k, observation_space.spaces[k], hidden_size)
                for k in self._image_keys
            }
        )
        vector_size = sum(
            int(np.prod(observation_space.spaces[k].shape)) for k in self._vector_keys
        )
        self.mlp = (
            nn.Sequential(
                nn.Linear(vector_size, hidden_size),
                nn.Tanh(),
                nn.Linear(hidden_size, hidden_size),
                nn.Tanh(),
            )
            if vector_size
            else None
        )
        embed_size = hidden_size * (len(self._image_keys) + (1 if self.mlp else 0))
        self._rnn_type = rnn_type
        if rnn_type == "none":
            self.state_encoder = None
            self.merge: Optional[nn.Sequential] = nn.Sequential(
                nn.Linear(embed_size, hidden_size), nn.Tanh()
            )
            self._num_layers = 1
        else:
            self.state_encoder = build_rnn_state_encoder(
                embed_size, hidden_size, rnn_type, num_recurrent_layers
            )
            self.merge = None
            self._num_layers = self.state_encoder.num_recurrent_layers

    @property
    def output_size(self) -> int:
        return self._hidden_size

    @property
    def num_recurrent_layers(self) -> int:
        return self._num_layers

    @property
    def recurrent_hidden_size(self) -> int:
        return self._hidden_size

    @property
    def is_blind(self) -> bool:
        return not self._image_keys

    @property
    def perception_embedding_size(self) -> int:
        """Width of ``perception_embed``: the image embeddings side by side."""
        return self._hidden_size * len(self._image_keys)

    @property
    def visual_encoder(self) -> Optional[nn.Module]:
        return None

    def forward(
        self,
        observations: Dict[str, torch.Tensor],
        rnn_hidden_states: torch.Tensor,
        prev_actions: torch.Tensor,
        masks: torch.Tensor,
        rnn_build_seq_info: Optional[Dict[str, torch.Tensor]] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor, Dict[str, torch.Tensor]]:
        parts = [self.cnns[k](observations[k]) for k in self._image_keys]
        # What upstream's auxiliary losses read (CPC|A predicts the images' embedding).
        aux_state: Dict[str, torch.Tensor] = {}
        if parts:
            aux_state["perception_embed"] = torch.cat(parts, 1)
        if self.mlp is not None:
            rows = masks.shape[0]
            vectors = torch.cat(
                [observations[k].float().reshape(rows, -1) for k in self._vector_keys], 1
            )
            parts.append(self.mlp(vectors))
        embedding = torch.cat(parts, 1)
        if self.state_encoder is None:
            # Feed-forward: the recurrent state is carried through untouched.
            assert self.merge is not None  # built exactly when there is no RNN
            features = self.merge(embedding)
        else:
            features, rnn_hidden_states = self.state_encoder(
                embedding, rnn_hidden_states, masks, rnn_build_seq_info
            )
        aux_state["rnn_output"] = features
        return features, rnn_hidden_states, aux_state


class CompactPolicy(NetPolicy):
    """habitat-baselines policy wrapping :class:`CompactNet`."""

    # The recurrent cores it builds (``rl.ddppo.rnn_type``, any case), checked
    # at start (:func:`habitat_ver.config.validate.validate_policies`); a
    # subclass inherits them.
    RNN_TYPES: Tuple[str, ...] = ("GRU", "LSTM", "none")

    def __init__(
        self,
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        hidden_size: int = 64,
        rnn_type: str = "none",
        num_recurrent_layers: int = 1,
        policy_config: "Optional[DictConfig]" = None,
        aux_loss_config: "Optional[DictConfig]" = None,
        **kwargs,
    ):
        requested = getattr(policy_config, "action_distribution_type", "categorical")
        if isinstance(action_space, spaces.Box) and requested == "categorical":
            # Upstream's categorical head over a Box sends action 0 for ever.
            raise ConfigError(
                "habitat_baselines.rl.policy.<agent>.action_distribution_type="
                f"'categorical' does not fit the action space {action_space}; "
                "set it to 'gaussian' for continuous actions"
            )
        net = CompactNet(
            observation_space,
            action_space,
            hidden_size,
            rnn_type,
            num_recurrent_layers,
        )
        check_aux_losses_fit(aux_loss_config, net.is_blind, "CompactPolicy")
        super().__init__(
            net,
            action_space=action_space,
            policy_config=policy_config,
            aux_loss_config=aux_loss_config,
        )

    @classmethod
    def from_config(
        cls,
        config: "DictConfig",
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        agent_name: Optional[str] = None,
        **kwargs,
    ) -> "CompactPolicy":
        policy_config = agent_policy_config(config, agent_name)
        return cls(
            observation_space=policy_observation_space(config, observation_space),
            action_space=action_space,
            hidden_size=config.habitat_baselines.rl.ppo.hidden_size,
            rnn_type=config.habitat_baselines.rl.ddppo.rnn_type,
            num_recurrent_layers=config.habitat_baselines.rl.ddppo.num_recurrent_layers,
            policy_config=policy_config,
            aux_loss_config=config.habitat_baselines.rl.get("auxiliary_losses"),
        )
