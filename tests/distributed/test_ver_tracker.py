"""VER's preemption decision shared through a store (two ranks, one HashStore)."""

import pytest
import torch.distributed as dist

from habitat_ver.distributed.ver_preemption import optimal_preemption_steps
from habitat_ver.distributed.ver_tracker import VERPreemptionTracker

N, T = 2, 16


def _ranks():
    store = dist.HashStore()
    return store, [VERPreemptionTracker(store, r, 2, N, T) for r in (0, 1)]


def test_every_rank_plans_the_same_s_from_the_published_numbers():
    _, (r0, r1) = _ranks()
    r0.publish(0, step_time=0.001, learn_time=0.30)  # waited in the all-reduce
    r1.publish(0, step_time=0.040, learn_time=0.05)  # arrived last: learning alone
    expected = optimal_preemption_steps([0.001, 0.040], N, T, 0.05).steps
    assert r0.plan_next(0) == r1.plan_next(0) == expected
    assert T * N <= expected < 2 * T * N  # the straggler is cut


def test_counter_preempts_once_s_steps_arrived_across_ranks():
    _, (r0, r1) = _ranks()
    assert not r0.should_preempt(0, 10)  # no plan yet: never preempt
    for r in (r0, r1):
        r.publish(0, 0.001, 0.05)
    r0.plan_next(0), r1.plan_next(0)
    assert r0.target == 2 * T * N  # equal speeds: collect everything
    assert not r0.should_preempt(1, 40)
    assert not r1.should_preempt(1, 23)  # 63 of 64
    assert r1.should_preempt(1, 1)  # 64
    assert r0.should_preempt(1, 0)  # the other rank sees it too


def test_forget_drops_an_updates_keys():
    store, (r0, r1) = _ranks()
    for r in (r0, r1):
        r.publish(3, 0.001, 0.05)
    r0.should_preempt(3, 0)
    r0.forget(3)
    prefixed = dist.PrefixStore("habitat_ver_ver_preemption", store)
    assert prefixed.num_keys() == 0


def test_bad_policy_is_refused_by_name(tmp_path):
    from habitat_ver.config.compose import get_config
    from habitat_ver.config.validate import ConfigError, validate

    config = get_config(
        "gym/ddppo_cartpole", ["habitat_baselines.distrib_preemption.policy=fastest"]
    )
    with pytest.raises(ConfigError, match="distrib_preemption.policy='fastest'"):
        validate(config)
