"""VER's stale fill: which old steps complete a preempted rollout, and how.

VER paper, section 2.3: a rank preempted after ``c < B`` fresh steps (``B =
T * N``) fills the missing ``B - c`` with the previous rollout's most recent
experience and learns on the full ``B`` (extra PPO epochs on the stale part;
the batch size per GPU is unchanged).  :func:`stale_fill_plan` says which
steps to reuse, :func:`reuse_order` orders the previous rollout's steps for
it, and :func:`with_stale_sequences` cuts the copies into sequences of their
own for learning.  The copying is
:meth:`~habitat_ver.storage.ver_storage.VERStorage.fill_stale`'s.
"""

from typing import NamedTuple, Optional

import torch
from torch import Tensor

from habitat_ver.common.checks import check_int, is_int
from habitat_ver.storage import minibatch as mb


class StaleFillPlan(NamedTuple):
    """How a preempted rank fills its batch with the previous rollout.

    The filled batch is ``previous[reuse_indices]`` followed by the fresh
    steps, so it stays ordered oldest first and its most recent experience is
    again at the end for the next fill.

    Attributes:
        reuse_indices: positions in the previous rollout (write order, oldest
            first) to copy, ascending.  Shape ``(B - c,)``, int64.
        stale_mask: True for the stale (reused) leading part of the filled
            batch.  Shape ``(B,)``, bool.
        num_stale: ``B - c``, steps taken from the previous rollout.
        stale_fraction: ``(B - c) / B``.
    """

    reuse_indices: torch.Tensor
    stale_mask: torch.Tensor
    num_stale: int
    stale_fraction: float


def stale_fill_plan(
    collected_steps: int,
    batch_steps: int,
    previous_steps: Optional[int] = None,
) -> StaleFillPlan:
    """Which steps of the previous rollout fill a preempted rank's batch.

    VER section 2.3: a rank preempted after ``c < B`` steps fills the missing
    ``B - c`` with the previous rollout's most recent experience, the last
    ``B - c`` steps in write order, and learns on the full ``B`` (extra PPO
    epochs on the stale part; the batch size per GPU is unchanged).

    Args:
        collected_steps: c, fresh steps collected this rollout, in ``[0, B]``.
        batch_steps: B, the rank's batch (buffer) size, ``T * N`` (>= 1).
        previous_steps: steps held by the previous rollout's buffer; defaults
            to B.  Must be >= B - c: a rank can only be preempted once a
            previous rollout exists (the first rollout is never preempted,
            there is no step-time estimate yet).

    Returns:
        The plan (see :class:`StaleFillPlan`).

    Raises:
        ValueError: on a bad argument, naming it and what is allowed.
    """
    check_int("batch_steps", batch_steps, 1)
    if not is_int(collected_steps) or not 0 <= collected_steps <= batch_steps:
        raise ValueError(
            f"collected_steps={collected_steps!r} is not allowed: must be an "
            f"integer in [0, batch_steps={batch_steps}]"
        )
    previous = batch_steps if previous_steps is None else previous_steps
    num_stale = batch_steps - collected_steps
    if not is_int(previous) or previous < num_stale:
        raise ValueError(
            f"previous_steps={previous!r} is not allowed: must be an integer >= "
            f"batch_steps - collected_steps = {num_stale} to fill the batch"
        )
    reuse = torch.arange(previous - num_stale, previous, dtype=torch.int64)
    stale_mask = torch.arange(batch_steps) < num_stale
    return StaleFillPlan(reuse, stale_mask, num_stale, num_stale / batch_steps)


def reuse_order(learnable: Tensor, was_stale: Tensor) -> Tensor:
    """The previous rollout's learnable slots in the order the plan reads them.

    Oldest first, its own stale copies (two rollouts old) before its fresh
    steps: the plan takes the last ones, so fresh steps go first, latest
    first, and stale copies only make up what fresh steps cannot; taking the
    latest fresh steps in write order gives each env a run of consecutive
    steps.

    Shapes:
        learnable, was_stale: ``[n]`` bool; returns ``[k]`` slot indices.
    """
    return torch.cat(
        [
            torch.nonzero(learnable & was_stale).view(-1),
            torch.nonzero(learnable & ~was_stale).view(-1),
        ]
    )


def with_stale_sequences(
    plan: mb.SlotSequences,
    stale: Tensor,
    env_ids: Tensor,
    step_ids: Tensor,
    episode_starts: Tensor,
) -> mb.SlotSequences:
    """``plan`` followed by the stale steps, cut into sequences of their own.

    Args:
        plan: the fresh steps' sequences.
        stale: True for the stale slots.
        env_ids, step_ids, episode_starts: the storage's per-slot records.

    Shapes:
        stale ``[n]``; env_ids, step_ids, episode_starts ``[capacity]``.
    """
    stale_slots = torch.nonzero(stale).view(-1)
    if stale_slots.numel() == 0:
        return plan
    seqs = mb.cut_sequences(
        env_ids[stale_slots], step_ids[stale_slots], episode_starts[stale_slots]
    )
    ordered = stale_slots[seqs.steps]
    return mb.SlotSequences(
        slots=torch.cat([plan.slots, ordered]),
        starts=torch.cat([plan.starts, seqs.starts + plan.slots.numel()]),
        lengths=torch.cat([plan.lengths, seqs.lengths]),
        envs=torch.cat([plan.envs, env_ids[ordered[seqs.starts]]]),
        bootstrap_slots=torch.cat([plan.bootstrap_slots, torch.full_like(seqs.starts, -1)]),
    )
