"""Action heads: independent Gaussians for Box parts, categoricals for Discrete.

A ``Dict`` or ``Tuple`` action space is split into its leaves; each leaf gets
its own head and the policy's distribution is their product, so log-probs and
entropies of the parts add up. Actions travel as one flat ``[B, D]`` tensor
with the parts side by side in the space's order: a ``Box`` part takes
``prod(shape)`` columns, a ``Discrete`` part one column (the index).

Gaussian heads read habitat-baselines' ``ActionDistributionConfig`` keys
(``rl.policy[agent].action_dist``) with upstream's meaning: the standard
deviation is a state-independent parameter (``use_std_param``) or predicted
from the features, parameterised as a log (``use_log_std``), through a
softplus (``use_softplus``) or directly, and clamped (``clamp_std``) to
``[min_log_std, max_log_std]`` (log) or ``[min_std, max_std]`` in the same
parameterisation; ``action_activation="tanh"`` squashes the mean.
``scheduled_std`` and ``std_init`` are not read.

One difference from upstream: a clamped std *parameter* is kept inside its
bounds after every optimiser step (:meth:`GaussianHead.project_into_bounds_`)
and gets its gradient also on a bound. Upstream only clamps where it is read,
and torch's clamp passes no gradient beyond a bound (nor on it, in torch 2.14),
so a parameter initialised on its bound (or pushed past it) never moves again.
"""

import math
from typing import Any, List, NamedTuple, Optional

import numpy as np
import torch
from gym import spaces
from torch import Tensor, nn
from torch.nn import functional as F

__all__ = [
    "ActionPart",
    "split_action_space",
    "flat_action_space",
    "num_action_dims",
    "gaussian_log_prob",
    "gaussian_entropy",
    "DiagGaussian",
    "Categorical",
    "ProductDistribution",
    "GaussianHead",
    "CategoricalHead",
    "ActionHead",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class ActionPart(NamedTuple):
    """One leaf of an action space.

    Attributes:
        space: the leaf (``Box`` or ``Discrete``).
        start: first column of the part in the flat action tensor.
        width: columns it takes (``prod(shape)`` for Box, 1 for Discrete).
    """

    space: spaces.Space
    start: int
    width: int

    @property
    def is_discrete(self) -> bool:
        return isinstance(self.space, spaces.Discrete)


def _leaves(space: spaces.Space) -> List[spaces.Space]:
    if isinstance(space, spaces.Dict):
        return [leaf for s in space.spaces.values() for leaf in _leaves(s)]
    if isinstance(space, spaces.Tuple):
        return [leaf for s in space.spaces for leaf in _leaves(s)]
    if isinstance(space, (spaces.Box, spaces.Discrete)):
        return [space]
    raise ValueError(
        f"action space {space} is not supported; use Box, Discrete, or a Dict/Tuple of them"
    )


def split_action_space(space: spaces.Space) -> List[ActionPart]:
    """The leaves of ``space`` with their columns in the flat action tensor."""
    parts, start = [], 0
    for leaf in _leaves(space):
        width = 1 if isinstance(leaf, spaces.Discrete) else int(np.prod(leaf.shape))
        parts.append(ActionPart(leaf, start, width))
        start += width
    return parts


def num_action_dims(space: spaces.Space) -> int:
    """Action dimensions: Box elements plus one per Discrete part.

    This is the count the entropy target ``-factor * dims`` uses.
    """
    return sum(p.width for p in split_action_space(space))


def flat_action_space(space: spaces.Space) -> spaces.Space:
    """The space of the flat action tensor that rollout storages hold.

    ``Box`` and ``Discrete`` are returned unchanged; a Dict/Tuple of Boxes
    becomes one flat Box, of Discretes a ``MultiDiscrete`` (stored as long);
    a mixed one a flat float Box whose Discrete columns hold indices.
    """
    parts = split_action_space(space)
    if isinstance(space, (spaces.Box, spaces.Discrete)):
        return space
    if all(p.is_discrete for p in parts):
        return spaces.MultiDiscrete([p.space.n for p in parts])
    low = np.concatenate([np.zeros(1) if p.is_discrete else p.space.low.reshape(-1) for p in parts])
    high = np.concatenate(
        [np.full(1, p.space.n - 1) if p.is_discrete else p.space.high.reshape(-1) for p in parts]
    )
    return spaces.Box(low.astype(np.float32), high.astype(np.float32))


def gaussian_log_prob(mean: Tensor, std: Tensor, actions: Tensor) -> Tensor:
    """Sum over dimensions of independent normal log-densities.

    ``log N(a; mu, sigma) = -(a - mu)^2 / (2 sigma^2) - log sigma - log(2 pi)/2``

    Shapes:
        mean, std, actions: ``[B, D]`` (std may broadcast). Returns ``[B, 1]``.
    """
    z = (actions - mean) / std
    return (-0.5 * z.pow(2) - torch.log(std) - _HALF_LOG_2PI).sum(-1, keepdim=True)


def gaussian_entropy(std: Tensor) -> Tensor:
    """Sum over dimensions of ``1/2 + log(2 pi)/2 + log sigma``.

    Shapes:
        std: ``[B, D]``. Returns ``[B, 1]``.
    """
    return (0.5 + _HALF_LOG_2PI + torch.log(std)).sum(-1, keepdim=True)


class DiagGaussian:
    """Independent normals over ``D`` dimensions (``[B, D]`` mean and std)."""

    def __init__(self, mean: Tensor, std: Tensor):
        self.mean, self.std = mean, std.expand_as(mean)

    def sample(self) -> Tensor:
        return self.mean + self.std * torch.randn_like(self.mean)

    def mode(self) -> Tensor:
        return self.mean

    def log_probs(self, actions: Tensor) -> Tensor:
        return gaussian_log_prob(self.mean, self.std, actions.to(self.mean.dtype))

    def entropy(self) -> Tensor:
        return gaussian_entropy(self.std)


class Categorical:
    """A categorical over ``n`` choices; actions are ``[B, 1]`` indices."""

    def __init__(self, logits: Tensor):
        self.log_p = F.log_softmax(logits, dim=-1)

    def sample(self) -> Tensor:
        return torch.multinomial(self.log_p.exp(), 1)

    def mode(self) -> Tensor:
        return self.log_p.argmax(-1, keepdim=True)

    def log_probs(self, actions: Tensor) -> Tensor:
        return self.log_p.gather(-1, actions.long())

    def entropy(self) -> Tensor:
        return -(self.log_p.exp() * self.log_p).sum(-1, keepdim=True)


class ProductDistribution:
    """Product of independent part distributions over column slices.

    Args:
        dists: one distribution per part (``DiagGaussian`` or
            ``Categorical``).
        parts: the matching :class:`ActionPart` entries.
        dtype: dtype of the flat action tensor (long when all parts are
            discrete, float otherwise).
    """

    def __init__(self, dists: List[Any], parts: List[ActionPart], dtype):
        self.dists, self.parts, self.dtype = dists, parts, dtype

    def _cat(self, pieces: List[Tensor]) -> Tensor:
        return torch.cat([p.to(self.dtype) for p in pieces], dim=-1)

    def sample(self) -> Tensor:
        return self._cat([d.sample() for d in self.dists])

    def mode(self) -> Tensor:
        return self._cat([d.mode() for d in self.dists])

    @property
    def mean(self) -> Tensor:
        """Deterministic action (means and argmaxes), upstream's spelling."""
        return self.mode()

    def log_probs(self, actions: Tensor) -> Tensor:
        """Sum of the parts' log-probs. Shapes: ``[B, D]`` -> ``[B, 1]``."""
        return sum(
            d.log_probs(actions[:, p.start : p.start + p.width])
            for d, p in zip(self.dists, self.parts)
        )

    def entropy(self) -> Tensor:
        """Sum of the parts' entropies. Shapes: ``[B, 1]``."""
        return sum(d.entropy() for d in self.dists)


def _cfg(config: Optional[Any], key: str, default: Any) -> Any:
    if config is None or key not in config:
        return default
    return config[key]


class GaussianHead(nn.Module):
    """Features -> :class:`DiagGaussian` over ``num_outputs`` dimensions.

    Args:
        num_inputs: feature size.
        num_outputs: action dimensions ``D``.
        config: upstream ``ActionDistributionConfig`` (or None for its
            defaults: predicted, clamped log-std in ``[-5, 2]``, tanh mean).
    """

    def __init__(self, num_inputs: int, num_outputs: int, config: Optional[Any] = None):
        super().__init__()
        self.use_log_std = _cfg(config, "use_log_std", True)
        self.use_softplus = _cfg(config, "use_softplus", False)
        self.clamp_std = _cfg(config, "clamp_std", True)
        self.tanh_mean = _cfg(config, "action_activation", "tanh") == "tanh"
        if self.use_log_std:
            bounds = (_cfg(config, "min_log_std", -5), _cfg(config, "max_log_std", 2))
            std_init = float(_cfg(config, "log_std_init", 0.0))
        elif self.use_softplus:
            # Clamp and initialise before the softplus, as upstream does.
            inv_softplus = lambda x: math.log(math.expm1(x))  # noqa: E731
            bounds = (
                inv_softplus(_cfg(config, "min_std", 1e-6)),
                inv_softplus(_cfg(config, "max_std", 1)),
            )
            std_init = inv_softplus(1.0)
        else:
            bounds = (_cfg(config, "min_std", 1e-6), _cfg(config, "max_std", 1))
            std_init = 1.0
        self.std_bounds = (float(bounds[0]), float(bounds[1]))
        self.num_outputs = num_outputs
        self.std_param: Optional[nn.Parameter]
        if _cfg(config, "use_std_param", False):
            self.std_param = nn.Parameter(torch.full((num_outputs,), std_init))
            self.linear = nn.Linear(num_inputs, num_outputs)
        else:
            self.std_param = None
            self.linear = nn.Linear(num_inputs, 2 * num_outputs)
        nn.init.orthogonal_(self.linear.weight, gain=0.01)
        nn.init.constant_(self.linear.bias, 0.0)
        if self.std_param is None:
            nn.init.constant_(self.linear.bias[num_outputs:], std_init)

    def forward(self, features: Tensor) -> DiagGaussian:
        out = self.linear(features).float()
        if self.std_param is None:
            mean, raw_std = out.split(self.num_outputs, dim=-1)
        else:
            mean, raw_std = out, self.std_param.float()
        if self.tanh_mean:
            mean = torch.tanh(mean)
        if self.clamp_std and self.std_param is not None:
            # The value is clamped, the gradient passes as if it were not: the
            # parameter sits inside its bounds after every optimiser step
            # (project_into_bounds_), also on a bound, where torch's clamp may
            # pass none.
            raw_std = raw_std + (raw_std.clamp(*self.std_bounds) - raw_std).detach()
        elif self.clamp_std:
            raw_std = raw_std.clamp(*self.std_bounds)
        if self.use_log_std:
            std = raw_std.exp()
        elif self.use_softplus:
            std = F.softplus(raw_std)
        else:
            std = raw_std
        return DiagGaussian(mean, std)

    @torch.no_grad()
    def project_into_bounds_(self) -> None:
        """Clamps the std parameter (if any, and if clamped) into its bounds.

        Called by the updater after each optimiser step, so that the value
        :meth:`forward` reads (clamped, with the gradient passed straight
        through) is the parameter itself and a step back from a bound moves it.
        """
        if self.std_param is not None and self.clamp_std:
            self.std_param.clamp_(*self.std_bounds)


class CategoricalHead(nn.Module):
    """Features -> :class:`Categorical` over ``n`` choices (small init)."""

    def __init__(self, num_inputs: int, n: int):
        super().__init__()
        self.linear = nn.Linear(num_inputs, n)
        nn.init.orthogonal_(self.linear.weight, gain=0.01)
        nn.init.constant_(self.linear.bias, 0.0)

    def forward(self, features: Tensor) -> Categorical:
        return Categorical(self.linear(features).float())


class ActionHead(nn.Module):
    """One head per leaf of ``action_space``; returns their product.

    Args:
        num_inputs: feature size.
        action_space: Box, Discrete, or a Dict/Tuple of them.
        action_dist_config: upstream ``ActionDistributionConfig`` for the
            Gaussian parts (None: upstream's defaults).
    """

    def __init__(
        self, num_inputs: int, action_space: spaces.Space, action_dist_config: Optional[Any] = None
    ):
        super().__init__()
        self.parts = split_action_space(action_space)
        self.heads = nn.ModuleList(
            CategoricalHead(num_inputs, p.space.n)
            if p.is_discrete
            else GaussianHead(num_inputs, p.width, action_dist_config)
            for p in self.parts
        )
        self.all_discrete = all(p.is_discrete for p in self.parts)
        self.any_discrete = any(p.is_discrete for p in self.parts)

    def forward(self, features: Tensor) -> ProductDistribution:
        dtype = torch.long if self.all_discrete else torch.float32
        return ProductDistribution([h(features) for h in self.heads], self.parts, dtype)
