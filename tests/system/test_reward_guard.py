"""Non-finite rewards: learnt as 0, counted, fatal past the configured limit."""

import math

import pytest
import torch

from habitat_ver.system.reward_guard import NonFiniteRewardError, NonFiniteRewards


def test_nonfinite_rewards_are_zeroed_counted_and_fatal_past_the_limit():
    guard = NonFiniteRewards(limit=3)
    ids = torch.tensor([4, 7, 9])
    rewards = torch.tensor([1.5, math.nan, -math.inf])
    cleaned = guard.clean(ids, rewards)
    assert cleaned.tolist() == [1.5, 0.0, 0.0] and guard.count == 2
    assert math.isnan(rewards[1])  # the caller's tensor is left alone
    assert guard.clean(ids, torch.tensor([[0.5], [2.0], [3.0]])).view(-1).tolist() == [
        0.5,
        2.0,
        3.0,
    ]
    assert guard.clean(ids[:1], torch.tensor([math.inf])).tolist() == [0.0]
    assert guard.count == 3  # at the limit: still tolerated
    with pytest.raises(
        NonFiniteRewardError,
        match=r"environment 9 returned reward nan: 4 non-finite .*"
        r"max_nonfinite_rewards=3",
    ):
        guard.clean(ids, torch.tensor([0.0, 1.0, math.nan]))
