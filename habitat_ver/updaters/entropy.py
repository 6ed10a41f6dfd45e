"""The entropy coefficient of the PPO updater: fixed, or learned with its own optimiser.

Both kinds share one interface (:class:`EntropyCoefficient`), so the updater
asks either for its loss term, its value, its step and its resume state
without knowing which it holds. The learned one's math lives in
:mod:`habitat_ver.algo.entropy_coef`; this module owns its state
(``log_alpha`` and its Adam moments), the projection into bounds, and what is
saved in resume states. It works for any policy whose distribution reports an
entropy: Gaussian, categorical or a product of both.
"""

import math
from typing import Any, Dict, Optional, Tuple

import numpy as np
import torch
from gym import spaces
from torch import Tensor, nn

from habitat_ver.algo.entropy_coef import (
    ALPHA_BOUNDS,
    ALPHA_INIT,
    TARGET_ENTROPY,
    clamp_log_alpha,
    entropy_coef_loss,
)

__all__ = [
    "EntropyCoefficient",
    "FixedEntropyCoefficient",
    "LearnedEntropyCoefficient",
    "action_dims",
]


class EntropyCoefficient:
    """Interface: what the PPO updater asks of its entropy coefficient."""

    def value(self) -> Tensor:
        """The current coefficient, detached (logged as ``learner/entropy_coef``)."""
        raise NotImplementedError

    def loss(self, entropy: Tensor, measured: Optional[Tensor] = None) -> Tensor:
        """The entropy term of the total loss (scalar).

        Args:
            entropy: ``H``, the bonus' differentiable mean entropy (with VER's
                importance weights, their unnormalised weighted mean).
            measured: the policy's own mean entropy (None: ``H``).
        """
        raise NotImplementedError

    def step(self) -> None:
        """After the policy's optimiser step (a learned coefficient steps too)."""

    def get_state(self) -> Dict[str, Any]:
        """What a resumed run needs back ({}: nothing)."""
        return {}

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores what :meth:`get_state` returned."""


class FixedEntropyCoefficient(EntropyCoefficient):
    """``rl.ppo.entropy_coef`` as it is: the loss term ``-coef * H``.

    Args:
        coef: the coefficient (>= 0).
    """

    def __init__(self, coef: float):
        self.coef = float(coef)

    def value(self) -> Tensor:
        return torch.tensor(self.coef)

    def loss(self, entropy: Tensor, measured: Optional[Tensor] = None) -> Tensor:
        """``-coef * H``: an entropy bonus; ``measured`` is not used."""
        return -self.coef * entropy

    def set_state(self, state: Dict[str, Any]) -> None:
        """Nothing is learned: a learned coefficient's saved state is ignored."""


class LearnedEntropyCoefficient(nn.Module, EntropyCoefficient):
    """``alpha = exp(log_alpha)`` kept in bounds, stepped by its own Adam.

    Usage per minibatch: add :meth:`loss` (``H`` the differentiable mean
    entropy) to the total loss, back-propagate, then call :meth:`step`.
    ``log_alpha`` is deliberately outside the policy's optimiser, so the
    policy's gradient clipping and learning-rate schedule do not touch it.

    Args:
        target: target entropy ``lambda`` (nats).
        init_alpha: initial ``alpha`` (paper: 1e-3).
        bounds: ``(min, max)`` of ``alpha`` (paper: ``(1e-4, 1)``).
        lr: Adam learning rate for ``log_alpha``.
        eps: Adam epsilon.
    """

    def __init__(
        self,
        target: float = TARGET_ENTROPY,
        init_alpha: float = ALPHA_INIT,
        bounds: Tuple[float, float] = ALPHA_BOUNDS,
        lr: float = 2.5e-4,
        eps: float = 1e-5,
    ):
        super().__init__()
        if not 0 < bounds[0] <= init_alpha <= bounds[1]:
            raise ValueError(
                f"init_alpha={init_alpha} must lie in bounds {tuple(bounds)} "
                "with a positive lower bound"
            )
        self.target = float(target)
        self.bounds = (float(bounds[0]), float(bounds[1]))
        self.log_alpha = nn.Parameter(torch.tensor(math.log(init_alpha)))
        self.optimizer = torch.optim.Adam([self.log_alpha], lr=lr, eps=eps)

    def forward(self) -> Tensor:
        """The current ``alpha`` (differentiable through ``log_alpha``)."""
        return self.log_alpha.exp()

    def value(self) -> Tensor:
        return self().detach()

    def loss(self, entropy: Tensor, measured: Optional[Tensor] = None) -> Tensor:
        """``alpha * ([H_m]_sg - target) - [alpha]_sg * H`` (scalar); ``H_m``:
        ``measured``, the entropy the constraint compares (None: ``H``)."""
        return entropy_coef_loss(self.log_alpha, entropy, self.target, measured)

    def step(self) -> None:
        """Adam step on ``log_alpha`` from its gradient, projection, zero grad."""
        if self.log_alpha.grad is not None:
            self.optimizer.step()
        with torch.no_grad():
            self.log_alpha.copy_(clamp_log_alpha(self.log_alpha, self.bounds))
        self.optimizer.zero_grad(set_to_none=True)

    def get_state(self) -> Dict[str, Any]:
        """Everything needed to resume: ``log_alpha`` and Adam's moments."""
        return {
            "log_alpha": self.log_alpha.detach().clone(),
            "optim_state": self.optimizer.state_dict(),
        }

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores what :meth:`get_state` returned."""
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        self.optimizer.load_state_dict(state["optim_state"])


def action_dims(space: spaces.Space) -> int:
    """Action dimensions for the entropy target: one per Box element or choice.

    A Discrete (or each MultiDiscrete) part is one dimension, whatever its
    number of choices; Dict/Tuple spaces add their parts up.
    """
    if isinstance(space, spaces.Dict):
        return sum(action_dims(s) for s in space.spaces.values())
    if isinstance(space, spaces.Tuple):
        return sum(action_dims(s) for s in space.spaces)
    if isinstance(space, spaces.Discrete):
        return 1
    if isinstance(space, spaces.MultiDiscrete):
        return int(np.prod(space.shape))
    if isinstance(space, spaces.Box):
        return int(np.prod(space.shape))
    raise ValueError(f"cannot count the dimensions of action space {space}")
