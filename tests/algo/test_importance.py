"""Numeric tests for habitat_ver.algo.importance."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from habitat_ver.algo.importance import truncated_importance_weights


def test_hand_computed():
    # S = 2 + 4 + 6 = 12, N = 3, uniform count S / N = 4:
    # raw weights 4/2 = 2, 4/4 = 1, 4/6 = 0.6667; truncated at 1 and at 3.
    counts = torch.tensor([2, 4, 6])
    torch.testing.assert_close(
        truncated_importance_weights(counts), torch.tensor([1.0, 1.0, 4 / 6])
    )
    torch.testing.assert_close(
        truncated_importance_weights(counts, 3.0), torch.tensor([2.0, 1.0, 4 / 6])
    )


def test_env_without_steps_gets_the_cap():
    # S = 8, N = 2: env 0 has 8/2/8 = 0.5, env 1 none -> +inf -> cap.
    torch.testing.assert_close(
        truncated_importance_weights(torch.tensor([8, 0]), 1.0), torch.tensor([0.5, 1.0])
    )


@settings(max_examples=100, deadline=None)
@given(
    counts=st.lists(st.integers(0, 50), min_size=1, max_size=8).filter(lambda c: sum(c) > 0),
    cap=st.sampled_from([0.5, 1.0, 2.0]),
)
def test_properties(counts, cap):
    w = truncated_importance_weights(torch.tensor(counts), cap)
    s, n = sum(counts), len(counts)
    assert w.dtype == torch.float32 and bool((w <= cap).all())
    for c, wi in zip(counts, w.tolist()):
        expected = cap if c == 0 else min(cap, s / (n * c))
        assert wi == pytest.approx(expected, rel=1e-6)
    if cap == 1.0:  # truncation never up-weights: total weight <= S
        assert float((w * torch.tensor(counts)).sum()) <= s * (1 + 1e-6)


@given(k=st.integers(1, 100), n=st.integers(1, 16))
def test_equal_counts_give_exactly_one(k, n):
    assert torch.equal(truncated_importance_weights(torch.full((n,), k)), torch.ones(n))


def test_error_paths():
    with pytest.raises(ValueError, match="max_weight"):
        truncated_importance_weights(torch.tensor([1]), 0.0)
    with pytest.raises(ValueError, match="positive sum"):
        truncated_importance_weights(torch.tensor([0, 0]))
    with pytest.raises(ValueError, match="1-D"):
        truncated_importance_weights(torch.ones(2, 2))
