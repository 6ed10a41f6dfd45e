"""VER's minibatch construction: cut, order, split and pack sequences.

Pure functions over CPU index tensors (VER paper, section 2.2, "Learning
mini-batch creation" and "Batching computation for learning"):

1. :func:`cut_sequences` cuts the collected steps into ``K >= N`` sequences at
   rollout starts (a new environment's steps), episode starts and step gaps.
2. :func:`random_sequence_order` / :func:`sequence_order_by_env` order them.
3. :func:`split_into_minibatches` lays the ordered sequences end to end and
   cuts that line into ``B`` minibatches of exactly ``S / B`` steps; a
   sequence crossing a boundary becomes two (or more) *pieces*.
4. :func:`pack_sequences` arranges one minibatch's pieces in PyTorch's
   PackedSequence order (time-major: step 0 of every piece, then step 1 of
   the pieces at least 2 long, ...), and :func:`packed_rnn_build_seq_info`
   describes that layout to habitat's ``build_rnn_state_encoder``.

Every piece, including the tail of a cut sequence, is its own RNN sequence
with its own initial state: the storage hands the RNN the recurrent state
recorded at collection time for the piece's first step. (habitat-baselines'
VER instead gives every sequence of an environment the state stored at that
environment's *first* sequence in the minibatch, which is wrong for a cut
tail when the same environment has a previous episode in that minibatch.)
"""

from typing import Any, Dict, List, NamedTuple, Optional

import numpy as np
from numpy.typing import NDArray
import torch
from torch import Tensor

__all__ = [
    "PackedLayout",
    "Pieces",
    "Sequences",
    "SlotSequences",
    "cut_sequences",
    "learnable_sequences",
    "pack_sequences",
    "packed_rnn_build_seq_info",
    "random_sequence_order",
    "sequence_order_by_env",
    "split_into_minibatches",
]


class Sequences(NamedTuple):
    """Steps grouped into sequences.

    Attributes:
        steps: indices into the inputs of :func:`cut_sequences`, sequence
            after sequence, in time order inside each sequence. ``[S]``
        starts: offset of each sequence's first step in ``steps``. ``[K]``
        lengths: number of steps of each sequence. ``[K]``
    """

    steps: Tensor
    starts: Tensor
    lengths: Tensor


class Pieces(NamedTuple):
    """The pieces of sequences forming one minibatch.

    Attributes:
        starts: offset of each piece's first step in ``Sequences.steps``
            (a piece's steps are consecutive there). ``[P]``
        lengths: number of steps of each piece. ``[P]``
    """

    starts: Tensor
    lengths: Tensor


class PackedLayout(NamedTuple):
    """PackedSequence order of one minibatch's pieces.

    Attributes:
        indices: for each packed position, the offset of its step in
            ``Sequences.steps``; the first ``K`` positions are the first steps
            of the pieces, longest piece first. ``[M]``
        num_seqs_at_step: how many pieces are at least ``t + 1`` long. ``[L]``
        lengths: piece lengths in packed column order (non-increasing). ``[K]``
    """

    indices: Tensor
    num_seqs_at_step: Tensor
    lengths: Tensor


def _starts_and_lengths(is_start: Tensor) -> "tuple[Tensor, Tensor]":
    """Offsets and lengths of the runs that begin where ``is_start`` is True."""
    starts = torch.nonzero(is_start).view(-1)
    ends = torch.cat([starts[1:], starts.new_tensor([is_start.numel()])])
    return starts, ends - starts


def cut_sequences(env_ids: Tensor, step_ids: Tensor, episode_starts: Tensor) -> Sequences:
    """Cuts steps into per-environment, per-episode sequences.

    A sequence starts at each environment's first step (the rollout start),
    at every step that begins an episode and after any missing step (a
    stale fill can give an env steps 2, 3 and 5: step 5 must start from its
    own recorded recurrent state, not run on from step 3's).

    Args:
        env_ids: environment of each step.
        step_ids: per-environment time stamp, increasing in time.
        episode_starts: True where the step's observation starts an episode
            (habitat's ``masks`` is False there).

    Returns:
        :class:`Sequences`, ordered by environment then time.

    Shapes:
        env_ids, step_ids, episode_starts: ``[S]``, ``S >= 1``.

    Raises:
        ValueError: on empty input or a repeated ``(env, step)`` pair.
    """
    if env_ids.numel() == 0:
        raise ValueError("cut_sequences needs at least one step")
    # Lexicographic sort by (env, step) from two stable sorts.
    order = torch.sort(step_ids, stable=True).indices
    order = order[torch.sort(env_ids[order], stable=True).indices]
    envs, steps = env_ids[order], step_ids[order]
    same_env = envs[1:] == envs[:-1]
    if bool((same_env & (steps[1:] == steps[:-1])).any()):
        raise ValueError("cut_sequences got the same (env, step) twice")
    is_start = episode_starts[order].clone()
    is_start[0] = True
    is_start[1:] |= ~same_env | (steps[1:] != steps[:-1] + 1)
    starts, lengths = _starts_and_lengths(is_start)
    return Sequences(order, starts, lengths)


class SlotSequences(NamedTuple):
    """A rollout's learnable slots cut into sequences, with their bootstraps.

    Attributes:
        slots: slot of each step, sequence after sequence, time order. ``[S]``
        starts: offset of each sequence in ``slots``. ``[K]``
        lengths: number of steps of each sequence. ``[K]``
        envs: environment of each sequence. ``[K]``
        bootstrap_slots: slot whose value follows each sequence's last step,
            -1 where that step ended the episode (nothing to bootstrap). ``[K]``
    """

    slots: Tensor
    starts: Tensor
    lengths: Tensor
    envs: Tensor
    bootstrap_slots: Tensor


def learnable_sequences(
    env_ids: Tensor,
    step_ids: Tensor,
    episode_starts: Tensor,
    dones: Tensor,
    learnable: Tensor,
    pending_slot: Tensor,
) -> SlotSequences:
    """Cuts a linear buffer's learnable slots into sequences.

    A sequence that does not end its episode ends at its env's latest
    learnable step, so the env's pending slot (its next observation) holds
    the bootstrap value.

    Args:
        env_ids, step_ids, episode_starts: per slot, as in
            :func:`cut_sequences`.
        dones: per slot, True where the step ended its episode.
        learnable: per slot, True for steps whose reward has arrived.
        pending_slot: per env, the slot of its step awaiting a reward, or -1.

    Shapes:
        env_ids, step_ids, episode_starts, dones, learnable: ``[C]``;
        pending_slot: ``[N]``.

    Raises:
        ValueError: with no learnable slot, or when a sequence neither ends
            its episode nor is followed by a pending slot.
    """
    slots = torch.nonzero(learnable).view(-1)
    if slots.numel() == 0:
        raise ValueError("no learnable step was collected")
    seqs = cut_sequences(env_ids[slots], step_ids[slots], episode_starts[slots])
    ordered = slots[seqs.steps]
    last = ordered[seqs.starts + seqs.lengths - 1]
    envs = env_ids[last]
    boot = torch.where(dones[last], torch.full_like(envs, -1), pending_slot[envs])
    if bool(((boot < 0) & ~dones[last]).any()):
        raise ValueError("a sequence ends mid-episode without a following pending step")
    return SlotSequences(ordered, seqs.starts, seqs.lengths, envs, boot)


def random_sequence_order(
    num_sequences: int, generator: Optional[torch.Generator] = None
) -> Tensor:
    """A uniformly random order of the sequences (VER's shuffling).

    Shapes:
        returns: ``[K]``.
    """
    return torch.randperm(num_sequences, generator=generator)


def sequence_order_by_env(seq_env_ids: Tensor, env_order: Tensor) -> Tensor:
    """Orders sequences by their environment's rank in ``env_order``.

    Sequences of one environment keep their relative (time) order, so with
    ``T`` steps from every environment and ``B`` dividing ``N`` each
    minibatch holds whole environments, like lock-step storage.

    Args:
        seq_env_ids: environment of each sequence, in 0..N-1.
        env_order: a permutation of 0..N-1.

    Shapes:
        seq_env_ids: ``[K]``; env_order: ``[N]``; returns: ``[K]``.
    """
    rank = torch.empty_like(env_order)
    rank[env_order] = torch.arange(env_order.numel())
    return torch.sort(rank[seq_env_ids], stable=True).indices


def split_into_minibatches(
    starts: Tensor, lengths: Tensor, order: Tensor, num_mini_batch: int
) -> List[Pieces]:
    """Lays sequences end to end in ``order`` and cuts B equal minibatches.

    Args:
        starts: offset of each sequence in ``Sequences.steps``.
        lengths: length of each sequence.
        order: the order to lay the sequences in (a permutation of 0..K-1).
        num_mini_batch: ``B``; must divide the total number of steps.

    Returns:
        ``B`` :class:`Pieces`, each covering exactly ``S / B`` steps.

    Shapes:
        starts, lengths, order: ``[K]``.

    Raises:
        ValueError: if ``B < 1`` or ``S`` is not a positive multiple of B.
    """
    total = int(lengths.sum())
    if num_mini_batch < 1 or total == 0 or total % num_mini_batch != 0:
        raise ValueError(
            f"num_mini_batch={num_mini_batch} must be >= 1 and divide the "
            f"{total} collected steps (VER minibatches hold exactly "
            f"steps / num_mini_batch steps)"
        )
    size = total // num_mini_batch
    ord_lengths, ord_starts = lengths[order], starts[order]
    seq_of = torch.repeat_interleave(torch.arange(order.numel()), ord_lengths)
    pos_in_seq = torch.arange(total) - (torch.cumsum(ord_lengths, 0) - ord_lengths)[seq_of]
    # A piece starts at each sequence start and at each minibatch start.
    is_start = pos_in_seq == 0
    is_start[::size] = True
    first, piece_lengths = _starts_and_lengths(is_start)
    piece_starts = ord_starts[seq_of[first]] + pos_in_seq[first]
    counts = torch.bincount(first // size, minlength=num_mini_batch).tolist()
    return [
        Pieces(s, n)
        for s, n in zip(torch.split(piece_starts, counts), torch.split(piece_lengths, counts))
    ]


def pack_sequences(starts: Tensor, lengths: Tensor) -> PackedLayout:
    """PackedSequence (time-major) order of a set of pieces.

    Columns are the pieces sorted by decreasing length (ties keep their
    given order); row ``t`` holds step ``t`` of every piece longer than ``t``.

    Args:
        starts: offset of each piece's first step in ``Sequences.steps``.
        lengths: length of each piece, all >= 1.

    Returns:
        :class:`PackedLayout`.

    Shapes:
        starts, lengths: ``[K]``; see :class:`PackedLayout` for the outputs.
    """
    sorted_lengths, column = torch.sort(lengths, descending=True, stable=True)
    num_seqs_at_step = torch.flip(
        torch.cumsum(torch.flip(torch.bincount(sorted_lengths)[1:], (0,)), 0),
        (0,),
    )
    row_of = torch.repeat_interleave(torch.arange(num_seqs_at_step.numel()), num_seqs_at_step)
    row_offset = torch.cumsum(num_seqs_at_step, 0) - num_seqs_at_step
    rank = torch.arange(row_of.numel()) - row_offset[row_of]
    indices = starts[column][rank] + row_of
    return PackedLayout(indices, num_seqs_at_step, sorted_lengths)


def packed_rnn_build_seq_info(layout: PackedLayout) -> Dict[str, NDArray[Any]]:
    """habitat's ``rnn_build_seq_info`` for a batch already in packed order.

    The batch's rows are in :class:`PackedLayout` order, so ``select_inds`` is
    the identity, and every piece is its own "environment" with its own
    initial recurrent state: the batch's ``recurrent_hidden_states`` row
    ``k`` is piece ``k``'s (``rnn_state_batch_inds`` is the identity). Pass
    the result to ``build_rnn_build_seq_info(device, ...)``.

    Returns:
        The keys habitat's ``build_pack_info_from_episode_ids`` returns.
    """
    num_steps = int(layout.lengths.sum())
    num_seqs = layout.lengths.numel()
    seqs = np.arange(num_seqs, dtype=np.int64)
    every = np.ones(num_seqs, dtype=bool)
    return {
        "select_inds": np.arange(num_steps, dtype=np.int64),
        "num_seqs_at_step": layout.num_seqs_at_step.numpy().astype(np.int64),
        "sequence_starts": seqs,
        "sequence_lengths": layout.lengths.numpy().astype(np.int64),
        "rnn_state_batch_inds": seqs.copy(),
        "last_sequence_in_batch_mask": every,
        "first_sequence_in_batch_mask": every.copy(),
        "last_sequence_in_batch_inds": seqs.copy(),
        "first_episode_in_batch_inds": seqs.copy(),
        "first_step_for_env": seqs.copy(),
    }
