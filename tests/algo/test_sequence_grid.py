"""The end-aligned grid of back-to-back sequences (algo/sequence_grid.py)."""

import doctest

import torch

from habitat_ver.algo import sequence_grid
from habitat_ver.algo.sequence_grid import from_end_aligned_grid, to_end_aligned_grid


def test_docstring_examples():
    assert doctest.testmod(sequence_grid).failed == 0


def test_each_sequence_ends_in_the_last_row_and_comes_back_unchanged():
    # Sequences [1, 2, 3], [4], [5, 6]: 3 rows, padding (0) at the front.
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    lengths = torch.tensor([3, 1, 2])
    grid = to_end_aligned_grid(x, lengths, 0.0)
    assert grid.tolist() == [[1.0, 0.0, 0.0], [2.0, 0.0, 5.0], [3.0, 4.0, 6.0]]
    assert torch.equal(from_end_aligned_grid(grid, lengths), x)
