"""V-trace off-policy value targets and policy-gradient advantages.

Reference: L. Espeholt et al., "IMPALA: Scalable Distributed Deep-RL with
Importance Weighted Actor-Learner Architectures", ICML 2018, section 4.1
(eq. 1) and 4.2 (policy gradient); used with PPO clipping by Sample Factory
(Petrenko et al. 2020, section 3.4, with rho-bar = c-bar = 1).

Pure functions on time-major ``[T, N, ...]`` tensors. The behaviour policy
``mu`` collected the data, the target policy ``pi`` is being learned. With
``rho_t = min(rho_bar, pi(a_t|x_t) / mu(a_t|x_t))``,
``c_t = min(c_bar, pi(a_t|x_t) / mu(a_t|x_t))``, ``nd_t = 1 - done_t`` and
``V_T`` = ``bootstrap_value``, IMPALA's n-step target (eq. 1)::

    v_s = V_s + sum_{t=s}^{T-1} gamma^(t-s) (prod_{i=s}^{t-1} c_i) delta_t
    delta_t = rho_t (r_t + gamma nd_t V_{t+1} - V_t)

is computed by its backward recursion (with the sum cut at episode ends)::

    v_s - V_s = delta_s + gamma nd_s c_s (v_{s+1} - V_{s+1}),   v_T = V_T

and the policy-gradient advantage (section 4.2) is::

    A_s = rho_s (r_s + gamma nd_s v_{s+1} - V_s).

With ``pi = mu`` and ``rho_bar = c_bar = 1`` every ratio is 1, ``v_s`` is the
bootstrapped n-step return and ``A_s`` is GAE(gamma, lambda=1)'s advantage.
"""

from typing import NamedTuple, Optional

import torch
from torch import Tensor

from habitat_ver.algo.gae import _check_inputs, _with_truncation

__all__ = ["VTraceReturns", "vtrace"]


class VTraceReturns(NamedTuple):
    """Result of :func:`vtrace`; all detached, all shaped like ``rewards``.

    Attributes:
        vs: V-trace value targets ``v_s`` (critic regression targets).
        pg_advantages: policy-gradient advantages ``A_s``.
        clipped_rhos: truncated ratios ``rho_s`` (for diagnostics).
    """

    vs: Tensor
    pg_advantages: Tensor
    clipped_rhos: Tensor


def _check_same_shape(rewards: Tensor, **tensors: Tensor) -> None:
    for name, x in tensors.items():
        if x.shape != rewards.shape:
            raise ValueError(
                f"{name} shape {tuple(x.shape)} must equal rewards shape {tuple(rewards.shape)}"
            )


def vtrace(
    behaviour_log_probs: Tensor,
    target_log_probs: Tensor,
    rewards: Tensor,
    values: Tensor,
    dones: Tensor,
    bootstrap_value: Tensor,
    gamma: float,
    vtrace_rho_clip: float = 1.0,
    vtrace_c_clip: float = 1.0,
    truncated: Optional[Tensor] = None,
    truncation_values: Optional[Tensor] = None,
) -> VTraceReturns:
    """V-trace targets and advantages (see the module docstring's equations).

    Targets are constants of the loss (IMPALA section 4.2), so every input is
    detached and the outputs carry no gradient.

    Args:
        behaviour_log_probs: ``log mu(a_t|x_t)`` of the policy that acted.
        target_log_probs: ``log pi(a_t|x_t)`` of the policy being learned.
        rewards: reward received after acting at each step.
        values: critic's value ``V(x_t)`` at each step.
        dones: True where the episode ended after acting at that step.
        bootstrap_value: ``V(x_T)``, the value after the last step.
        gamma: discount factor in [0, 1].
        vtrace_rho_clip: ``rho_bar`` > 0, truncates the ratio in ``delta_t``
            and in the policy-gradient advantage.
        vtrace_c_clip: ``c_bar`` > 0, truncates the trace coefficients.
        truncated, truncation_values: optional time-limit cuts and the value
            after each: ``r_t`` becomes ``r_t + gamma * truncation_values[t]``
            there (:func:`habitat_ver.algo.gae.bootstrap_truncated_rewards`).

    Returns:
        :class:`VTraceReturns` of new tensors.

    Shapes:
        behaviour_log_probs, target_log_probs, rewards, values, dones, truncated,
        truncation_values:
        ``[T, N, ...]``; bootstrap_value: ``[N, ...]``; outputs ``[T, N, ...]``.

    Raises:
        ValueError: on mismatched shapes or non-positive clip levels.
        TypeError: if ``dones`` is not bool.
    """
    _check_inputs(rewards, dones, bootstrap_value)
    _check_same_shape(
        rewards,
        values=values,
        behaviour_log_probs=behaviour_log_probs,
        target_log_probs=target_log_probs,
    )
    if vtrace_rho_clip <= 0 or vtrace_c_clip <= 0:
        raise ValueError(
            f"vtrace_rho_clip and vtrace_c_clip must be > 0; got {vtrace_rho_clip}, {vtrace_c_clip}"
        )
    rewards = _with_truncation(rewards, dones, truncated, truncation_values, gamma)
    rewards, values = rewards.detach(), values.detach()
    bootstrap_value = bootstrap_value.detach()
    ratios = torch.exp(target_log_probs.detach() - behaviour_log_probs.detach())
    rhos = ratios.clamp(max=vtrace_rho_clip)
    cs = ratios.clamp(max=vtrace_c_clip)
    discounts = gamma * torch.logical_not(dones).type_as(rewards)
    next_values = torch.cat([values[1:], bootstrap_value.unsqueeze(0)], 0)
    deltas = rhos * (rewards + discounts * next_values - values)

    vs_minus_v = torch.empty_like(values)
    acc = torch.zeros_like(bootstrap_value)
    # Linear recurrence backwards in time, vectorised over envs.
    for t in reversed(range(rewards.shape[0])):
        acc = deltas[t] + discounts[t] * cs[t] * acc
        vs_minus_v[t] = acc
    vs = vs_minus_v + values
    next_vs = torch.cat([vs[1:], bootstrap_value.unsqueeze(0)], 0)
    pg_advantages = rhos * (rewards + discounts * next_vs - values)
    return VTraceReturns(vs, pg_advantages, rhos)
