"""DD-PPO's preemption rule and the per-update store counters."""

import pytest
import torch.distributed as dist

from habitat_ver.distributed.preemption import RolloutTracker, dd_ppo_should_preempt


@pytest.mark.parametrize(
    "step, done, world, expected",
    [
        (31, 4, 4, False),  # ceil(128 * 0.25) = 32: too early to preempt
        (32, 3, 4, True),  # 3 >= 0.6 * 4 = 2.4 ranks finished
        (32, 2, 4, False),  # 2 < 2.4
        (100, 0, 1, False),  # a single rank is never preempted
        (64, 6, 10, True),  # 6 >= 6.0
        (64, 5, 10, False),
    ],
)
def test_rule_on_hand_made_cases(step, done, world, expected):
    assert dd_ppo_should_preempt(step, 128, done, world, sync_frac=0.6) is expected


def _store():
    return dist.HashStore()


def test_tracker_counts_each_update_separately():
    tracker = RolloutTracker(_store(), world_size=2, sync_frac=0.5)
    assert tracker.num_done(0) == 0
    tracker.mark_done(0)
    assert tracker.num_done(0) == 1
    assert tracker.num_done(1) == 0  # no reset needed for the next update
    assert tracker.should_preempt(0, rollout_step=10, num_steps=16)
    assert not tracker.should_preempt(1, rollout_step=10, num_steps=16)
    assert not tracker.should_preempt(0, rollout_step=3, num_steps=16)
    tracker.forget(0)
    assert tracker.num_done(0) == 0
