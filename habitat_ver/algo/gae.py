"""Discounted returns and Generalized Advantage Estimation (GAE).

Pure functions on time-major tensors: they read their inputs, allocate their
outputs and never write into the caller's buffers or move data between devices.

Reference: J. Schulman, P. Moritz, S. Levine, M. Jordan, P. Abbeel,
"High-Dimensional Continuous Control Using Generalized Advantage Estimation",
ICLR 2016, section 3 (equations 11-16).

Conventions used throughout this module:

* ``dones[t]`` is True when the episode ENDED at step ``t``, i.e. after the
  agent acted at ``t`` and received ``rewards[t]``. Step ``t + 1`` then belongs
  to a new episode, so nothing is bootstrapped across the boundary.
* ``bootstrap_value`` is ``V(s_T)``, the critic's value of the observation
  that follows the last stored step (habitat's ``next_value``).
* ``truncated[t]`` (optional, implies ``dones[t]``) is True when the episode
  was cut by a time limit after step ``t``, not ended by the task: the
  return continues past the cut, so ``gamma * truncation_values[t]`` (the
  value of the state after the cut) is added to ``rewards[t]``
  (:func:`bootstrap_truncated_rewards`). Without it every time limit looks
  like a terminal state of value 0.

VER's variable-length sequences, stored back to back, go through
:func:`compute_gae` unchanged, laid out on an end-aligned grid
(:mod:`habitat_ver.algo.sequence_grid`).
"""

from typing import Optional, Tuple

import torch
from torch import Tensor

__all__ = [
    "bootstrap_truncated_rewards",
    "compute_discounted_returns",
    "compute_gae",
    "dones_from_next_masks",
]


def dones_from_next_masks(masks: Tensor, num_steps: int) -> Tensor:
    """Converts habitat's ``masks`` buffer into ``dones``.

    habitat-baselines stores ``masks = not done`` one slot AFTER the step it
    describes: ``RolloutStorage.insert`` writes ``next_masks`` at index
    ``t + 1``, and ``masks[t + 1]`` is False when the episode ended after
    acting at ``t``. ``masks[0]`` describes the previous rollout and is not
    used. This is the only place the project reads dones out of that
    shifted buffer; the collectors only negate an env's fresh ``done`` into
    the ``masks`` argument upstream's policies take.

    Args:
        masks: habitat's mask buffer, bool (or 0/1) with at least
            ``num_steps + 1`` entries along time.
        num_steps: number of stored steps ``T`` in the rollout.

    Returns:
        ``dones`` as a new bool tensor, ``dones[t] = not masks[t + 1]``.

    Shapes:
        masks: ``[>= T + 1, N, ...]``
        returns: ``[T, N, ...]``

    Raises:
        ValueError: if ``masks`` holds fewer than ``num_steps + 1`` steps.
    """
    if masks.shape[0] < num_steps + 1:
        raise ValueError(
            f"masks has {masks.shape[0]} steps along time; need at least "
            f"num_steps + 1 = {num_steps + 1} (habitat stores masks at t + 1)"
        )
    return torch.logical_not(masks[1 : num_steps + 1])


def _check_inputs(rewards: Tensor, dones: Tensor, bootstrap_value: Tensor) -> None:
    """Raises ValueError/TypeError when inputs do not follow the conventions."""
    if rewards.dim() < 2:
        raise ValueError(
            f"rewards must be time-major [T, N, ...]; got shape {tuple(rewards.shape)}"
        )
    if dones.shape != rewards.shape:
        raise ValueError(
            f"dones shape {tuple(dones.shape)} must equal rewards shape {tuple(rewards.shape)}"
        )
    if dones.dtype != torch.bool:
        raise TypeError(
            f"dones must be a bool tensor (True = episode ended); got "
            f"{dones.dtype}. Convert habitat masks with dones_from_next_masks"
        )
    if bootstrap_value.shape != rewards.shape[1:]:
        raise ValueError(
            f"bootstrap_value shape {tuple(bootstrap_value.shape)} must equal "
            f"rewards.shape[1:] = {tuple(rewards.shape[1:])}"
        )


def bootstrap_truncated_rewards(
    rewards: Tensor,
    dones: Tensor,
    truncated: Tensor,
    truncation_values: Tensor,
    gamma: float,
) -> Tensor:
    """Rewards with the value after a time-limit cut folded in.

    ``r'_t = r_t + gamma * truncation_values[t]`` where ``truncated[t]``, else
    ``r_t``. Since a truncated step is done, nothing else is bootstrapped
    across it, so GAE's and V-trace's TD error there becomes
    ``r_t + gamma * V(s_{t+1}) - V(s_t)``, as if the episode went on
    (Pardo et al. 2018, "Time Limits in Reinforcement Learning"; Sample
    Factory does the same).

    Args:
        rewards: reward received after acting at each step.
        dones: True where the episode ended after that step.
        truncated: True where it ended by a time limit (a subset of dones).
        truncation_values: value of the state after each truncated step
            (read only where ``truncated``; may be NaN elsewhere).
        gamma: discount factor in [0, 1].

    Returns:
        A new rewards tensor.

    Shapes:
        all inputs and the output: ``[T, N, ...]``.

    Raises:
        ValueError: on mismatched shapes or a truncated step that is not done.
        TypeError: if ``truncated`` is not bool.
    """
    for name, x in (("truncated", truncated), ("truncation_values", truncation_values)):
        if x.shape != rewards.shape:
            raise ValueError(
                f"{name} shape {tuple(x.shape)} must equal rewards shape {tuple(rewards.shape)}"
            )
    if truncated.dtype != torch.bool:
        raise TypeError(f"truncated must be a bool tensor; got {truncated.dtype}")
    if bool((truncated & ~dones).any()):
        raise ValueError("truncated must imply dones: a time-limit cut ends the episode")
    extra = torch.where(truncated, truncation_values, torch.zeros_like(truncation_values))
    return rewards + gamma * extra


def _with_truncation(
    rewards: Tensor,
    dones: Tensor,
    truncated: Optional[Tensor],
    truncation_values: Optional[Tensor],
    gamma: float,
) -> Tensor:
    if truncated is None:
        return rewards
    if truncation_values is None:
        raise ValueError("truncated needs truncation_values (the value after each cut)")
    return bootstrap_truncated_rewards(rewards, dones, truncated, truncation_values, gamma)


def compute_gae(
    rewards: Tensor,
    values: Tensor,
    dones: Tensor,
    bootstrap_value: Tensor,
    gamma: float,
    gae_lambda: float,
    truncated: Optional[Tensor] = None,
    truncation_values: Optional[Tensor] = None,
) -> Tuple[Tensor, Tensor]:
    """Generalized Advantage Estimation, GAE(gamma, lambda).

    With ``V_T = bootstrap_value`` and ``A_T = 0``, for ``t = T-1 .. 0``::

        delta_t = r_t + gamma * V_{t+1} * (1 - done_t) - V_t
        A_t     = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}
        R_t     = A_t + V_t

    (Schulman et al. 2016, eq. 16, with the sum cut at episode ends.)
    ``lambda = 1`` gives the discounted Monte-Carlo return bootstrapped with
    ``V_T`` (see :func:`compute_discounted_returns`); ``lambda = 0`` gives
    the one-step TD error.

    The arithmetic is ordered as in habitat-baselines'
    ``RolloutStorage.compute_returns`` so that the two agree bit for bit in
    float32.

    Args:
        rewards: reward received after acting at each step.
        values: critic's value of the observation at each step.
        dones: True where the episode ended after acting at that step.
        bootstrap_value: critic's value of the observation after step T-1.
        gamma: discount factor in [0, 1].
        gae_lambda: GAE's lambda in [0, 1] (habitat calls it ``tau``).
        truncated, truncation_values: optional time-limit cuts and the value
            after each (:func:`bootstrap_truncated_rewards`).

    Returns:
        ``(advantages, returns)``, new tensors; ``returns = advantages +
        values`` is the critic's regression target.

    Shapes:
        rewards, values, dones, truncated, truncation_values: ``[T, N, ...]``
        bootstrap_value: ``[N, ...]``
        advantages, returns: ``[T, N, ...]``

    Raises:
        ValueError: on mismatched shapes.
        TypeError: if ``dones`` is not bool.
    """
    _check_inputs(rewards, dones, bootstrap_value)
    if values.shape != rewards.shape:
        raise ValueError(
            f"values shape {tuple(values.shape)} must equal rewards shape {tuple(rewards.shape)}"
        )
    rewards = _with_truncation(rewards, dones, truncated, truncation_values, gamma)
    not_dones = torch.logical_not(dones).type_as(rewards)
    advantages = torch.empty_like(rewards)
    next_value = bootstrap_value
    next_advantage = torch.zeros_like(bootstrap_value)
    # GAE is a linear recurrence backwards in time; T is small (tens to a few
    # hundred steps) and each step is vectorised over envs.
    for t in reversed(range(rewards.shape[0])):
        delta = rewards[t] + gamma * next_value * not_dones[t] - values[t]
        next_advantage = delta + gamma * gae_lambda * next_advantage * not_dones[t]
        advantages[t] = next_advantage
        next_value = values[t]
    return advantages, advantages + values


def compute_discounted_returns(
    rewards: Tensor,
    dones: Tensor,
    bootstrap_value: Tensor,
    gamma: float,
    truncated: Optional[Tensor] = None,
    truncation_values: Optional[Tensor] = None,
) -> Tensor:
    """Discounted returns bootstrapped with the critic, without GAE.

    With ``R_T = bootstrap_value``, for ``t = T-1 .. 0``::

        R_t = r_t + gamma * (1 - done_t) * R_{t+1}

    This is habitat's ``use_gae=False`` target; it equals the ``returns`` of
    :func:`compute_gae` with ``gae_lambda = 1`` up to rounding.

    Args:
        rewards: reward received after acting at each step.
        dones: True where the episode ended after acting at that step.
        bootstrap_value: critic's value of the observation after step T-1.
        gamma: discount factor in [0, 1].
        truncated, truncation_values: optional time-limit cuts and the value
            after each (:func:`bootstrap_truncated_rewards`).

    Returns:
        The returns, a new tensor.

    Shapes:
        rewards, dones, truncated, truncation_values: ``[T, N, ...]``
        bootstrap_value: ``[N, ...]``
        returns: ``[T, N, ...]``

    Raises:
        ValueError: on mismatched shapes.
        TypeError: if ``dones`` is not bool.
    """
    _check_inputs(rewards, dones, bootstrap_value)
    rewards = _with_truncation(rewards, dones, truncated, truncation_values, gamma)
    not_dones = torch.logical_not(dones).type_as(rewards)
    returns = torch.empty_like(rewards)
    next_return = bootstrap_value
    for t in reversed(range(rewards.shape[0])):
        # Same operand order as habitat's loop, for bit-exact agreement.
        next_return = gamma * next_return * not_dones[t] + rewards[t]
        returns[t] = next_return
    return returns
