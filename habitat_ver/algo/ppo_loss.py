"""PPO losses: clipped surrogate, value losses and diagnostics.

Pure functions: tensors and floats in, tensors out. Every loss reduces to a
(weighted) mean over the VALID entries of its input, so padding never changes
a loss value nor, through this module, a gradient.

References:
    J. Schulman, F. Wolski, P. Dhariwal, A. Radford, O. Klimov, "Proximal
    Policy Optimization Algorithms", 2017, section 3 (eq. 7, clipped
    surrogate) and section 5 (value loss and entropy bonus).
    E. Wijmans et al., "VER: Scaling On-Policy RL Leads to the Emergence of
    Navigation in Embodied Rearrangement", NeurIPS 2022, section 3.2
    (truncated importance weights passed as ``weights``).

Common arguments:
    weights: optional per-sample weights multiplying each sample's loss
        before the mean (VER's truncated importance weights). The mean still
        divides by the number of valid samples, as habitat-baselines does.
    mask: optional bool validity mask, True for real samples. Masked-out
        entries may hold any value (even NaN): they are replaced by neutral
        values before any arithmetic.

All tensors of one call share a shape ``[B, ...]`` (typically ``[B, 1]``,
flattened time-major ``T * N``); ``weights`` and ``mask`` must broadcast to it.
"""

from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "PolicyLoss",
    "approx_kl",
    "clipped_surrogate_loss",
    "clipped_value_loss",
    "gated_clipped_value_loss",
    "masked_mean",
    "normalised_mean",
    "value_loss",
]


class PolicyLoss(NamedTuple):
    """Result of :func:`clipped_surrogate_loss`.

    Attributes:
        loss: scalar policy loss (to minimise), differentiable.
        clip_fraction: scalar, fraction of valid samples whose probability
            ratio lies outside ``[1 - clip_eps, 1 + clip_eps]``; detached.
        ratio: detached probability ratios ``pi(a|s) / pi_behaviour(a|s)``,
            shape of the inputs; masked-out entries are 1.
    """

    loss: Tensor
    clip_fraction: Tensor
    ratio: Tensor


def _select(x: Tensor, mask: Optional[Tensor], neutral: float) -> Tensor:
    """Replaces masked-out entries by ``neutral`` (no gradient flows there)."""
    if mask is None:
        return x
    return torch.where(mask, x, torch.full_like(x, neutral))


def masked_mean(
    x: Tensor,
    mask: Optional[Tensor] = None,
    weights: Optional[Tensor] = None,
) -> Tensor:
    """Weighted mean of ``x`` over its valid entries.

    ``sum(w * x * m) / sum(m)``; without a mask this is ``mean(w * x)``,
    exactly habitat-baselines' reduction (so results agree bit for bit).

    Args:
        x: values to average.
        mask: optional bool validity mask, broadcastable to ``x``.
        weights: optional per-sample weights, broadcastable to ``x``.

    Returns:
        Scalar tensor. With an all-False mask the result is 0 (no samples,
        no loss) rather than NaN.

    Shapes:
        x: ``[B, ...]``; mask, weights: broadcastable to ``x``; out: ``[]``.
    """
    if weights is not None:
        x = _select(weights, mask, 0.0) * x if mask is not None else weights * x
    if mask is None:
        return torch.mean(x)
    mask = torch.broadcast_to(mask, x.shape)
    x = torch.where(mask, x, torch.zeros_like(x))
    return x.sum() / mask.sum().clamp(min=1).type_as(x)


def normalised_mean(
    x: Tensor,
    mask: Optional[Tensor] = None,
    weights: Optional[Tensor] = None,
) -> Tensor:
    """``sum(w * x * m) / sum(w * m)``: the weighted average of ``x`` (where
    :func:`masked_mean` divides by the count, so weights < 1 shrink it).

    Returns:
        Scalar tensor; 0 when no valid entry has a positive weight.

    Shapes:
        x: ``[B, ...]``; mask, weights: broadcastable to ``x``; out: ``[]``.
    """
    w = torch.ones_like(x) if weights is None else torch.broadcast_to(weights, x.shape)
    if mask is not None:
        w = torch.where(torch.broadcast_to(mask, x.shape), w, torch.zeros_like(w))
    # Without a positive weight the numerator is 0 too; the clamp keeps the
    # result 0, without a Python branch that would wait for a GPU tensor.
    return (w * x).sum() / w.sum().clamp(min=torch.finfo(w.dtype).tiny)


def clipped_surrogate_loss(
    log_probs: Tensor,
    behaviour_log_probs: Tensor,
    advantages: Tensor,
    clip_eps: float,
    weights: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
) -> PolicyLoss:
    """PPO's clipped surrogate objective, negated to be minimised.

    ::

        rho_i  = exp(log_probs_i - behaviour_log_probs_i)
        l_i    = -min(rho_i * A_i, clip(rho_i, 1 - eps, 1 + eps) * A_i)
        loss   = sum_i w_i * m_i * l_i / sum_i m_i

    (Schulman et al. 2017, eq. 7.)

    Args:
        log_probs: log-probabilities of the taken actions under the policy
            being optimised (differentiable).
        behaviour_log_probs: log-probabilities under the policy that
            collected the data.
        advantages: advantage estimates (e.g. from GAE).
        clip_eps: clipping range ``eps`` (habitat's ``clip_param``).
        weights: optional per-sample weights.
        mask: optional bool validity mask.

    Returns:
        A :class:`PolicyLoss` with the loss, the clip fraction and ratios.

    Shapes:
        log_probs, behaviour_log_probs, advantages: ``[B, ...]``
        weights, mask: broadcastable to ``[B, ...]``
    """
    log_probs = _select(log_probs, mask, 0.0)
    behaviour_log_probs = _select(behaviour_log_probs, mask, 0.0)
    advantages = _select(advantages, mask, 0.0)

    ratio = torch.exp(log_probs - behaviour_log_probs)
    surr1 = advantages * ratio
    surr2 = advantages * torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    loss = masked_mean(-torch.min(surr1, surr2), mask, weights)

    with torch.no_grad():
        # Written as habitat-baselines writes it (two one-sided tests rather
        # than |rho - 1| > eps) so boundary cases round the same way.
        clipped = (ratio > 1.0 + clip_eps) | (ratio < 1.0 - clip_eps)
        clip_fraction = masked_mean(clipped.type_as(ratio), mask)
    return PolicyLoss(loss, clip_fraction, ratio.detach())


def value_loss(
    values: Tensor,
    returns: Tensor,
    weights: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
) -> Tensor:
    """Unclipped critic loss ``0.5 * (V - R)^2``, averaged.

    Args:
        values: critic predictions (differentiable).
        returns: regression targets.
        weights: optional per-sample weights.
        mask: optional bool validity mask.

    Returns:
        Scalar loss.

    Shapes:
        values, returns: ``[B, ...]``; weights, mask: broadcastable.
    """
    values = _select(values, mask, 0.0)
    returns = _select(returns, mask, 0.0)
    per_sample = 0.5 * F.mse_loss(values, returns, reduction="none")
    return masked_mean(per_sample, mask, weights)


def clipped_value_loss(
    values: Tensor,
    old_values: Tensor,
    returns: Tensor,
    clip_eps: float,
    weights: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
) -> Tensor:
    """Pessimistic clipped critic loss (OpenAI baselines' PPO2).

    ::

        V_clip = V_old + clip(V - V_old, -eps, eps)
        l_i    = 0.5 * max((V - R)^2, (V_clip - R)^2)

    This is the form habitat-baselines used up to 0.2.x. Gradient flows
    through whichever term is larger.

    Args:
        values: critic predictions (differentiable).
        old_values: predictions stored at collection time.
        returns: regression targets.
        clip_eps: clipping range for the value change.
        weights: optional per-sample weights.
        mask: optional bool validity mask.

    Returns:
        Scalar loss.

    Shapes:
        values, old_values, returns: ``[B, ...]``; weights, mask:
        broadcastable.
    """
    values = _select(values, mask, 0.0)
    old_values = _select(old_values, mask, 0.0)
    returns = _select(returns, mask, 0.0)
    clipped = old_values + (values - old_values).clamp(-clip_eps, clip_eps)
    per_sample = 0.5 * torch.max((values - returns).pow(2), (clipped - returns).pow(2))
    return masked_mean(per_sample, mask, weights)


def gated_clipped_value_loss(
    values: Tensor,
    old_values: Tensor,
    returns: Tensor,
    clip_eps: float,
    weights: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
) -> Tensor:
    """habitat-baselines 0.3.x's ``use_clipped_value_loss`` critic loss.

    ::

        d_i    = [V_i]_sg - V_old_i
        V'_i   = V_i                                 if |d_i| < eps
               = [V_old_i + clip(d_i, -eps, eps)]_sg otherwise
        l_i    = 0.5 * (V'_i - R_i)^2

    Unlike :func:`clipped_value_loss` this is NOT the max of the two errors:
    a sample whose prediction moved by ``eps`` or more keeps contributing the
    clipped error to the loss value but gives the critic no gradient, even
    when moving further would reduce the error.

    Args:
        values: critic predictions (differentiable).
        old_values: predictions stored at collection time.
        returns: regression targets.
        clip_eps: clipping range for the value change (habitat reuses
            ``clip_param``).
        weights: optional per-sample weights.
        mask: optional bool validity mask.

    Returns:
        Scalar loss.

    Shapes:
        values, old_values, returns: ``[B, ...]``; weights, mask:
        broadcastable.
    """
    values = _select(values, mask, 0.0)
    old_values = _select(old_values, mask, 0.0)
    returns = _select(returns, mask, 0.0)
    delta = values.detach() - old_values
    clipped = old_values + delta.clamp(-clip_eps, clip_eps)
    gated = torch.where(delta.abs() < clip_eps, values, clipped)
    per_sample = 0.5 * F.mse_loss(gated, returns, reduction="none")
    return masked_mean(per_sample, mask, weights)


def approx_kl(
    log_probs: Tensor,
    behaviour_log_probs: Tensor,
    mask: Optional[Tensor] = None,
) -> Tensor:
    """Estimate of ``KL(behaviour || current)`` from the sampled actions.

    Uses the unbiased, always non-negative estimator
    ``k3 = (rho - 1) - log(rho)`` with ``rho = pi / pi_behaviour``
    (J. Schulman, "Approximating KL Divergence", 2020). A diagnostic only:
    the result is detached.

    Args:
        log_probs: log-probabilities under the current policy.
        behaviour_log_probs: log-probabilities under the behaviour policy.
        mask: optional bool validity mask.

    Returns:
        Scalar tensor, detached.

    Shapes:
        log_probs, behaviour_log_probs: ``[B, ...]``; mask: broadcastable.
    """
    with torch.no_grad():
        log_ratio = _select(log_probs, mask, 0.0) - _select(behaviour_log_probs, mask, 0.0)
        k3 = torch.expm1(log_ratio) - log_ratio
        return masked_mean(k3, mask)
