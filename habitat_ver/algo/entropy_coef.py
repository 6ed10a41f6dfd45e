"""Learned entropy coefficient: a minimum-entropy constraint (SAC-style).

VER paper section 4 ("Training") and Table A1 (appendix D): PPO keeps the
policy entropy ``H`` above a target ``lambda`` with a learned coefficient
``alpha`` (Haarnoja et al., 2018), initial value 1e-3, bounds ``[1e-4, 1]``,
target 0. Both the policy and ``alpha`` minimise one scalar::

    L(alpha, H) = alpha * ([H]_sg - lambda) - [alpha]_sg * H

``[.]_sg`` stops gradients. The policy sees ``-[alpha]_sg * H`` (an entropy
bonus weighted by the current alpha); alpha sees
``dL/dalpha = [H]_sg - lambda``, so gradient descent lowers alpha while the
entropy is above target and raises it below target — the Lagrangian dual of
``max J  s.t.  H >= lambda``.

Sign note: the paper's printed form ``alpha * (lambda - [H]_sg)`` and
habitat-baselines' ``LagrangeInequalityCoefficient(greater_than=True)`` carry
the opposite sign on the alpha term, which *raises* alpha while the entropy
is above target (driving it to its upper bound). This module follows SAC's
sign, under which alpha behaves as the constraint requires.

With VER's importance weights ``w <= 1`` the bonus term is ``mean(w * H)``,
as for the other losses, but the constraint compares the policy's entropy
itself, the weighted mean ``sum(w * H) / sum(w)`` (``measured`` below): the
unnormalised one is smaller by ``mean(w)`` and would raise alpha for a
policy already at its target.

``alpha`` is parameterised as ``log_alpha`` (always positive, scale-free
steps) and projected back into its bounds after each step.
"""

import math
from typing import Optional, Tuple

from torch import Tensor

__all__ = [
    "ALPHA_INIT",
    "ALPHA_BOUNDS",
    "TARGET_ENTROPY",
    "entropy_coef_loss",
    "clamp_log_alpha",
    "entropy_target",
]

# VER Table A1 defaults.
ALPHA_INIT = 1e-3
ALPHA_BOUNDS: Tuple[float, float] = (1e-4, 1.0)
TARGET_ENTROPY = 0.0


def entropy_coef_loss(
    log_alpha: Tensor, entropy: Tensor, target: float, measured: Optional[Tensor] = None
) -> Tensor:
    """``alpha * ([H_m]_sg - target) - [alpha]_sg * H`` with ``alpha = exp(log_alpha)``.

    Args:
        log_alpha: log of the coefficient (differentiable).
        entropy: the entropy bonus' term ``H`` of the minibatch (differentiable;
            with VER's importance weights, their unnormalised weighted mean).
        target: target entropy ``lambda`` (nats).
        measured: ``H_m``, the policy's mean entropy the constraint compares
            with ``target``; None: ``H``. VER's weights are <= 1, so their
            unnormalised mean ``H`` understates the entropy.

    Returns:
        The scalar loss; its gradient wrt ``log_alpha`` is
        ``alpha * ([H_m]_sg - target)`` and wrt ``H`` is ``-alpha``.

    Shapes:
        log_alpha, entropy, measured: ``[]``. Returns ``[]``.
    """
    alpha = log_alpha.exp()
    measured = entropy if measured is None else measured
    return alpha * (measured.detach() - target) - alpha.detach() * entropy


def clamp_log_alpha(log_alpha: Tensor, bounds: Tuple[float, float] = ALPHA_BOUNDS) -> Tensor:
    """``log_alpha`` projected onto ``[log(bounds[0]), log(bounds[1])]`` (new tensor).

    Shapes:
        log_alpha: any. Returns the same shape.
    """
    return log_alpha.clamp(math.log(bounds[0]), math.log(bounds[1]))


def entropy_target(entropy_target_factor: float, num_action_dims: int) -> float:
    """habitat's target: ``-entropy_target_factor * num_action_dims`` (nats).

    habitat-baselines' ``rl.ppo.entropy_target_factor`` keeps this meaning;
    the paper's target 0 is a factor of 0.
    """
    return -float(entropy_target_factor) * num_action_dims
