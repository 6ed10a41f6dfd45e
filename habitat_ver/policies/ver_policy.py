"""The VER paper's skill policy, registered as ``VERPolicy``.

VER paper section 4 ("Architecture"): the ConvNeXt-style half-width ResNet18
(:mod:`habitat_ver.policies.visual_encoder`) embeds the images; the embedding,
the proprioceptive/vector observations (1-D Box keys, fed raw) and an
embedding of the previous action go into a 2-layer LSTM; its output feeds the
action distribution (independent Gaussians for Box parts, categoricals for
Discrete parts, :mod:`habitat_ver.policies.action_heads`) and the value head.

It follows habitat-baselines' ``NetPolicy``/``Net`` contract, so upstream's
``PPOTrainer``, ``PPO`` and evaluator use it unchanged. Config: upstream keys
``rl.ppo.hidden_size`` (LSTM width), ``rl.ddppo.rnn_type``,
``rl.ddppo.num_recurrent_layers`` (the paper uses ``LSTM`` and 2),
``rl.ddppo.backbone`` (must be ``resnet18``), ``rl.policy[agent]``
(``action_distribution_type``, ``action_dist``), ``rl.auxiliary_losses``;
our own knobs in ``habitat_baselines.ver_policy``
(:class:`~habitat_ver.policies.ver_policy_config.VERPolicyConfig`).
"""

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, cast

import numpy as np
import torch
from gym import spaces
from omegaconf import OmegaConf
from torch import Tensor, nn

from habitat_baselines.rl.models.rnn_state_encoder import build_rnn_state_encoder
from habitat_baselines.rl.ppo.policy import (
    CriticHead,
    Net,
    NetPolicy,
    Policy,
    PolicyActionData,
    get_aux_modules,
)
from habitat_ver.config.aux_losses import check_aux_losses_fit
from habitat_ver.config.schema import section_or_default
from habitat_ver.policies.ver_policy_config import VERPolicyConfig
from habitat_ver.policies.agent_config import agent_policy_config, policy_observation_space
from habitat_ver.policies.action_heads import (
    ActionHead,
    flat_action_space,
    num_action_dims,
    split_action_space,
)
from habitat_ver.policies.visual_encoder import VisualEncoder

if TYPE_CHECKING:
    from omegaconf import DictConfig

__all__ = ["RecurrentCore", "PrevActionEmbedding", "VERNet", "VERPolicy"]

SUPPORTED_BACKBONES = ("resnet18",)


class RecurrentCore(nn.Module):
    """habitat's GRU/LSTM state encoder, plus plain time-major batches.

    Three input layouts, all flattened to rows:

    * one step per env (``B == N``): a single step;
    * ``rnn_build_seq_info`` given: upstream's PackedSequence path (episodes
      of a minibatch packed, one RNN call);
    * ``T * N`` rows without it: a time-major ``[T, N]`` batch, stepped ``T``
      times, resetting each env's state where ``masks`` is False.

    Shapes:
        x: ``[B, input_size]``; hidden_states: ``[N, L, H]``;
        masks: ``[B, 1]`` (bool or 0/1). Returns ``[B, H]`` and ``[N, L, H]``.
    """

    def __init__(self, input_size: int, hidden_size: int, rnn_type: str, num_layers: int):
        super().__init__()
        self.rnn = build_rnn_state_encoder(input_size, hidden_size, rnn_type, num_layers)
        self.num_recurrent_layers = self.rnn.num_recurrent_layers

    def forward(
        self,
        x: Tensor,
        hidden_states: Tensor,
        masks: Tensor,
        rnn_build_seq_info: Optional[Dict[str, Tensor]] = None,
    ) -> Tuple[Tensor, Tensor]:
        num_envs = hidden_states.size(0)
        if rnn_build_seq_info is not None or x.size(0) == num_envs:
            return self.rnn(x, hidden_states, masks.bool(), rnn_build_seq_info)
        if x.size(0) % num_envs:
            raise ValueError(
                f"{x.size(0)} rows are neither one step of {num_envs} envs nor "
                "a [T, N] batch, and no rnn_build_seq_info was given"
            )
        steps = x.size(0) // num_envs
        xs = x.view(steps, num_envs, -1)
        ms = masks.bool().view(steps, num_envs, 1)
        outs = []
        for t in range(steps):
            out, hidden_states = self.rnn(xs[t], hidden_states, ms[t])
            outs.append(out)
        return torch.cat(outs, 0), hidden_states


class PrevActionEmbedding(nn.Module):
    """Embeds the previous action, part by part; zero at episode starts.

    Discrete parts: ``nn.Embedding(n + 1)`` of ``(a + 1) * mask`` (index 0 =
    "no previous action"); Box parts: a linear map of ``a * mask``.

    Shapes:
        prev_actions: ``[B, D]`` flat actions; masks ``[B, 1]``.
        output: ``[B, parts * size]``.
    """

    def __init__(self, action_space: spaces.Space, size: int):
        super().__init__()
        self.parts = split_action_space(action_space)
        self.embeddings = nn.ModuleList(
            nn.Embedding(p.space.n + 1, size) if p.is_discrete else nn.Linear(p.width, size)
            for p in self.parts
        )
        self.output_size = size * len(self.parts)

    def forward(self, prev_actions: Tensor, masks: Tensor) -> Tensor:
        keep = masks.float()
        out = []
        for part, emb in zip(self.parts, self.embeddings):
            a = prev_actions[:, part.start : part.start + part.width]
            if part.is_discrete:
                out.append(emb(((a.float() + 1) * keep).long().squeeze(-1)))
            else:
                out.append(emb(a.float() * keep))
        return torch.cat(out, -1)


def _keys_of_rank(observation_space: spaces.Dict, rank: int) -> List[str]:
    return [
        k
        for k, s in observation_space.spaces.items()
        if isinstance(s, spaces.Box) and len(s.shape) == rank
    ]


class VERNet(Net):
    """Encoders + recurrent core of :class:`VERPolicy` (upstream ``Net``).

    Args:
        observation_space: gym ``Dict`` of observations.
        action_space: the environment's action space (for the previous
            action's embedding).
        hidden_size: LSTM width.
        rnn_type: ``LSTM`` or ``GRU``.
        num_recurrent_layers: stacked RNN layers.
        cfg: our encoder and embedding knobs.
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        hidden_size: int,
        rnn_type: str,
        num_recurrent_layers: int,
        cfg: VERPolicyConfig,
    ):
        super().__init__()
        visual_keys = cfg.visual_keys
        if visual_keys is None:
            visual_keys = _keys_of_rank(observation_space, 3)
        self.vector_keys = list(
            _keys_of_rank(observation_space, 1) if cfg.vector_keys is None else cfg.vector_keys
        )
        embed = cfg.visual_embedding_size or hidden_size
        # Both set, or both None (no image observation).
        self.visual_encoder: Optional[VisualEncoder]
        self.visual_fc: Optional[nn.Sequential]
        if visual_keys:
            self.visual_encoder = VisualEncoder(
                observation_space,
                visual_keys,
                cfg.base_planes,
                cfg.ngroups,
                tuple(cfg.dilations),
                cfg.layer_scale_init,
            )
            self.visual_fc = nn.Sequential(
                nn.Linear(self.visual_encoder.output_size, embed), nn.ReLU(True)
            )
        else:
            self.visual_encoder, self.visual_fc, embed = None, None, 0
        self._visual_size = embed
        vector_size = sum(int(np.prod(observation_space.spaces[k].shape)) for k in self.vector_keys)
        self.prev_action_embedding = PrevActionEmbedding(
            action_space, cfg.prev_action_embedding_size
        )
        self.state_encoder = RecurrentCore(
            embed + vector_size + self.prev_action_embedding.output_size,
            hidden_size,
            rnn_type,
            num_recurrent_layers,
        )
        self._hidden_size = hidden_size

    @property
    def output_size(self) -> int:
        return self._hidden_size

    @property
    def num_recurrent_layers(self) -> int:
        return self.state_encoder.num_recurrent_layers

    @property
    def recurrent_hidden_size(self) -> int:
        return self._hidden_size

    @property
    def is_blind(self) -> bool:
        return self.visual_encoder is None

    @property
    def perception_embedding_size(self) -> int:
        return self._visual_size

    def forward(
        self,
        observations: Dict[str, Tensor],
        rnn_hidden_states: Tensor,
        prev_actions: Tensor,
        masks: Tensor,
        rnn_build_seq_info: Optional[Dict[str, Tensor]] = None,
    ) -> Tuple[Tensor, Tensor, Dict[str, Tensor]]:
        aux_state: Dict[str, Tensor] = {}
        parts = []
        if self.visual_encoder is not None and self.visual_fc is not None:
            perception = self.visual_fc(self.visual_encoder(observations))
            aux_state["perception_embed"] = perception
            parts.append(perception)
        parts.extend(observations[k].float().flatten(1) for k in self.vector_keys)
        parts.append(self.prev_action_embedding(prev_actions, masks))
        features, rnn_hidden_states = self.state_encoder(
            torch.cat(parts, -1), rnn_hidden_states, masks, rnn_build_seq_info
        )
        aux_state["rnn_output"] = features
        return features, rnn_hidden_states, aux_state


def _plain(section: Any) -> Dict[str, Any]:
    """A config section (a DictConfig) as a plain dict keyed by field name."""
    # OmegaConf types the result for any node and key type.
    return cast(Dict[str, Any], OmegaConf.to_container(section, resolve=True))


def _distribution_type(action_space: spaces.Space, policy_config: Optional[Any]) -> str:
    """``categorical``/``gaussian``/``mixed`` from the space, checked against config."""
    parts = split_action_space(action_space)
    kinds = {p.is_discrete for p in parts}
    derived = "mixed" if len(kinds) == 2 else ("categorical" if True in kinds else "gaussian")
    requested = getattr(policy_config, "action_distribution_type", None)
    if requested is not None and derived != "mixed" and requested != derived:
        raise ValueError(
            f"habitat_baselines.rl.policy.<agent>.action_distribution_type="
            f"{requested!r} does not fit the action space {action_space}; "
            f"VERPolicy needs {derived!r} for it"
        )
    return derived


class VERPolicy(NetPolicy):
    """habitat-baselines policy wrapping :class:`VERNet` and our action heads.

    ``policy_action_space`` is the flat space the rollout storage holds (see
    :func:`~habitat_ver.policies.action_heads.flat_action_space`).

    Args:
        observation_space: gym ``Dict`` of observations.
        action_space: Box, Discrete, or a Dict/Tuple of them.
        hidden_size: LSTM width (paper: 512).
        rnn_type: ``LSTM`` (paper) or ``GRU``.
        num_recurrent_layers: RNN layers (paper: 2).
        policy_config: upstream ``rl.policy[agent]`` (distribution type and
            ``action_dist``), or None.
        ver_config: :class:`VERPolicyConfig`, or None for its defaults.
        aux_loss_config: upstream ``rl.auxiliary_losses``, or None.
    """

    # The recurrent cores it builds (``rl.ddppo.rnn_type``, any case), checked
    # at start (:func:`habitat_ver.config.validate.validate_policies`); a
    # subclass inherits them.
    RNN_TYPES: Tuple[str, ...] = ("GRU", "LSTM")

    @classmethod
    def image_keys_read(cls, config: "DictConfig") -> Optional[List[str]]:
        """The image observations this policy reads under ``config``: its
        ``habitat_baselines.ver_policy.visual_keys``, or None (every one).
        The cameras it does not read are not rendered
        (:mod:`habitat_ver.config.unread_cameras`)."""
        keys = OmegaConf.select(config, "habitat_baselines.ver_policy.visual_keys", default=None)
        return None if keys is None else [str(k) for k in keys]

    def __init__(
        self,
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        hidden_size: int = 512,
        rnn_type: str = "LSTM",
        num_recurrent_layers: int = 2,
        policy_config: "Optional[DictConfig]" = None,
        ver_config: Optional[VERPolicyConfig] = None,
        aux_loss_config: "Optional[DictConfig]" = None,
        **kwargs: Any,
    ):
        # NetPolicy.__init__ would build upstream's single-distribution head;
        # set up its attributes here with our product head instead.
        Policy.__init__(self, flat_action_space(action_space))
        nn.Module.__init__(self)
        self.net = VERNet(
            observation_space,
            action_space,
            hidden_size,
            rnn_type,
            num_recurrent_layers,
            ver_config or VERPolicyConfig(),
        )
        self.action_distribution_type = _distribution_type(action_space, policy_config)
        self.dim_actions = num_action_dims(action_space)
        self.action_distribution = ActionHead(
            self.net.output_size,
            action_space,
            getattr(policy_config, "action_dist", None),
        )
        self.critic = CriticHead(self.net.output_size)
        check_aux_losses_fit(aux_loss_config, self.net.is_blind, "VERPolicy")
        # upstream annotates DictConfig but returns no modules for None.
        self.aux_loss_modules = get_aux_modules(
            aux_loss_config,  # type: ignore[arg-type]
            action_space,
            self.net,
        )

    def act(
        self,
        observations: Dict[str, Tensor],
        rnn_hidden_states: Tensor,
        prev_actions: Tensor,
        masks: Tensor,
        deterministic: bool = False,
        **kwargs: Any,
    ) -> PolicyActionData:
        """Samples (or, if deterministic, takes the mode of) the next action."""
        features, rnn_hidden_states, _ = self.net(
            observations, rnn_hidden_states, prev_actions, masks
        )
        distribution = self.action_distribution(features)
        action = distribution.mode() if deterministic else distribution.sample()
        return PolicyActionData(
            values=self.critic(features),
            actions=action,
            action_log_probs=distribution.log_probs(action),
            rnn_hidden_states=rnn_hidden_states,
        )

    @classmethod
    def from_config(
        cls,
        config: "DictConfig",
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        agent_name: Optional[str] = None,
        **kwargs: Any,
    ) -> "VERPolicy":
        """Upstream's constructor contract; see the module docstring for keys."""
        baselines = config.habitat_baselines
        backbone = baselines.rl.ddppo.backbone
        if backbone not in SUPPORTED_BACKBONES:
            raise ValueError(
                f"habitat_baselines.rl.ddppo.backbone={backbone!r} is not "
                f"supported by VERPolicy; allowed: {list(SUPPORTED_BACKBONES)}"
            )
        policy_config = agent_policy_config(config, agent_name)
        ver_config = section_or_default(config, "ver_policy", VERPolicyConfig)
        return cls(
            observation_space=policy_observation_space(config, observation_space),
            action_space=action_space,
            hidden_size=baselines.rl.ppo.hidden_size,
            rnn_type=baselines.rl.ddppo.rnn_type,
            num_recurrent_layers=baselines.rl.ddppo.num_recurrent_layers,
            policy_config=policy_config,
            ver_config=VERPolicyConfig(**_plain(ver_config)),
            aux_loss_config=baselines.rl.get("auxiliary_losses"),
        )
