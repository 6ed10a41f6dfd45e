"""VER's stale-fill plan: which previous steps complete a preempted batch (VER section 2.3)."""

import pytest
import torch

from habitat_ver.storage.stale_fill import stale_fill_plan


def test_full_batch_needs_no_stale_steps():
    plan = stale_fill_plan(collected_steps=8, batch_steps=8)
    assert plan.num_stale == 0
    assert plan.stale_fraction == 0.0
    assert plan.reuse_indices.tolist() == []
    assert plan.stale_mask.tolist() == [False] * 8


def test_empty_rollout_reuses_the_whole_previous_one():
    plan = stale_fill_plan(collected_steps=0, batch_steps=4)
    assert plan.num_stale == 4
    assert plan.stale_fraction == 1.0
    assert plan.reuse_indices.tolist() == [0, 1, 2, 3]
    assert plan.stale_mask.tolist() == [True] * 4


def test_partial_rollout_reuses_the_most_recent_previous_steps():
    # B = 8, c = 5: the 3 missing steps are the previous rollout's last three
    # (positions 5, 6, 7 of 8); stale fraction 3 / 8.
    plan = stale_fill_plan(collected_steps=5, batch_steps=8)
    assert plan.reuse_indices.tolist() == [5, 6, 7]
    assert plan.reuse_indices.dtype == torch.int64
    assert plan.stale_mask.tolist() == [True] * 3 + [False] * 5
    assert plan.stale_fraction == pytest.approx(0.375)


def test_longer_previous_rollout_reuses_its_tail():
    plan = stale_fill_plan(collected_steps=2, batch_steps=4, previous_steps=10)
    assert plan.reuse_indices.tolist() == [8, 9]


@pytest.mark.parametrize(
    "args, match",
    [
        ((-1, 8), r"collected_steps=-1 is not allowed: must be an integer in \[0, batch_steps=8\]"),
        ((9, 8), r"collected_steps=9 is not allowed: must be an integer in \[0, batch_steps=8\]"),
        ((1.5, 8), r"collected_steps=1.5 is not allowed"),
        ((0, 0), r"batch_steps=0 is not allowed: must be an integer >= 1"),
        ((2, 8, 5), r"previous_steps=5 is not allowed: .*collected_steps = 6"),
    ],
)
def test_bad_stale_fill_arguments_are_named(args, match):
    with pytest.raises(ValueError, match=match):
        stale_fill_plan(*args)
