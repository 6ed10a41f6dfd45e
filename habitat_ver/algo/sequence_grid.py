"""Variable-length sequences stored back to back, laid out as a time-major grid.

VER cuts its experience into ``K`` sequences of different lengths (VER
paper, section 2.2), stored back to back in time order (``[S, ...]`` with
``S = lengths.sum()``).  A backward recursion in time (returns, GAE) runs on
all of them at once in a ``[max(lengths), K, ...]`` grid where every sequence
is END-aligned (padded at the front): each sequence's last step sits in the
last row, so a per-column bootstrap value follows it, and a recursion that
reads only later steps reaches the padding only after a sequence's real steps.

Pure functions: they allocate their outputs and never write into their inputs.
"""

from typing import Tuple

import torch
from torch import Tensor

__all__ = ["end_aligned_positions", "from_end_aligned_grid", "to_end_aligned_grid"]


def end_aligned_positions(lengths: Tensor) -> Tuple[Tensor, Tensor]:
    """(row, column) in the end-aligned grid of every step of the sequences.

    Args:
        lengths: steps of each sequence, all >= 1.

    Returns:
        ``(rows, columns)``, each ``[S]``: step ``i`` of the back-to-back
        layout sits at ``grid[rows[i], columns[i]]``.

    Example (lengths 2 and 1: the second sequence sits in the last row)::

        >>> rows, cols = end_aligned_positions(torch.tensor([2, 1]))
        >>> rows.tolist(), cols.tolist()
        ([0, 1, 1], [0, 0, 1])
    """
    seq_of_step = torch.repeat_interleave(
        torch.arange(lengths.shape[0], device=lengths.device), lengths
    )
    first_step = torch.cumsum(lengths, 0) - lengths
    pos = torch.arange(seq_of_step.shape[0], device=lengths.device)
    pos = pos - first_step[seq_of_step]
    return int(lengths.max()) - lengths[seq_of_step] + pos, seq_of_step


def to_end_aligned_grid(x: Tensor, lengths: Tensor, fill: float) -> Tensor:
    """The back-to-back steps ``x`` in the end-aligned grid, padding = ``fill``.

    Shapes:
        x: ``[S, ...]``; lengths: ``[K]``; returns ``[max(lengths), K, ...]``.
    """
    rows, columns = end_aligned_positions(lengths)
    grid = x.new_full((int(lengths.max()), lengths.shape[0], *x.shape[1:]), fill)
    grid[rows, columns] = x
    return grid


def from_end_aligned_grid(grid: Tensor, lengths: Tensor) -> Tensor:
    """The real steps of an end-aligned grid, back to back (inverse of
    :func:`to_end_aligned_grid`).

    Shapes:
        grid: ``[max(lengths), K, ...]``; lengths: ``[K]``; returns ``[S, ...]``.
    """
    rows, columns = end_aligned_positions(lengths)
    return grid[rows, columns]
