"""VER's estimated optimal preemption (VER section 2.3)."""

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from habitat_ver.distributed.ver_preemption import (
    estimated_collect_time,
    optimal_preemption_steps,
)


def test_uniform_speeds_collect_everything():
    # 4 ranks, t = 0.01 s, N = 2, T = 10: every buffer (20 steps) fills at
    # tau = T * t = 0.1 s; S = 80 gives 80 / (0.1 + 0.5) = 133.3 steps/s, and
    # below 80 the objective only grows with S (no rank is full yet).
    plan = optimal_preemption_steps([0.01] * 4, envs_per_rank=2, num_steps=10, learn_time=0.5)
    assert plan.steps == 80
    assert plan.collect_time == pytest.approx(0.1)
    assert plan.steps_per_second == pytest.approx(80 / 0.6)


def test_single_rank_collects_everything():
    plan = optimal_preemption_steps([0.3], envs_per_rank=4, num_steps=8, learn_time=0.0)
    assert plan.steps == 32  # tie at rate 4 / 0.3 for every S: the larger S wins
    assert plan.collect_time == pytest.approx(8 * 0.3)


def test_ten_times_slower_rank_is_preempted_at_the_fast_ranks_completion():
    # t = [0.01, 0.01, 0.01, 0.1], N = 1, T = 10, LT = 0.05.
    # Fast ranks fill at tau = 0.1 s; the slow one has 0.1 / 0.1 = 1 step then:
    #   S = 31: 31 / (0.1 + 0.05) = 206.7 steps/s
    #   S = 40 (slow rank full at tau = 1.0 s): 40 / (1.0 + 0.05) = 38.1 steps/s
    plan = optimal_preemption_steps([0.01, 0.01, 0.1, 0.01], 1, 10, learn_time=0.05)
    assert plan.steps == 31
    assert plan.steps < 40
    assert plan.collect_time == pytest.approx(0.1)
    assert plan.steps_per_second == pytest.approx(31 / 0.15)


def test_dominant_learning_time_collects_everything():
    # Same ranks, LT = 100 s: 31 / 100.1 = 0.310 < 40 / 101 = 0.396 steps/s.
    plan = optimal_preemption_steps([0.01, 0.01, 0.01, 0.1], 1, 10, learn_time=100.0)
    assert plan.steps == 40
    assert plan.collect_time == pytest.approx(1.0)


def test_non_integer_kink_rounds_to_the_better_side():
    # t = [0.01, 0.03], N = 1, T = 10, LT = 0: the fast rank fills at 0.1 s
    # when the slow one has 0.1 / 0.03 = 3.33 steps, so the kink is S = 13.33.
    #   S = 13: rate 100 + 33.3 = 133.3/s, Time = 13 / 133.3 = 0.0975 s -> 133.3/s
    #   S = 14: Time = 0.1 + (14 - 13.33) / 33.3 = 0.12 s -> 116.7/s
    plan = optimal_preemption_steps(torch.tensor([0.03, 0.01]), 1, 10, learn_time=0.0)
    assert plan.steps == 13
    assert plan.collect_time == pytest.approx(0.0975)


def test_collect_time_on_hand_made_cases():
    times = [0.01, 0.03]
    assert estimated_collect_time(0, times, 1, 10) == 0.0
    assert estimated_collect_time(14, times, 1, 10) == pytest.approx(0.12)
    assert estimated_collect_time(20, times, 1, 10) == pytest.approx(0.3)  # slow rank full


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(step_times_per_rank=[]), r"step_times_per_rank has shape \(0,\): must be 1-D"),
        (dict(step_times_per_rank=[0.1, 0.0]), r"step_times_per_rank=\[0.1, 0.0\].*> 0"),
        (dict(step_times_per_rank=[float("nan")]), "must be finite"),
        (dict(envs_per_rank=0), r"envs_per_rank=0 is not allowed: must be an integer >= 1"),
        (dict(num_steps=2.0), r"num_steps=2.0 is not allowed: must be an integer >= 1"),
        (dict(learn_time=-1.0), r"learn_time=-1.0 is not allowed: .*>= 0"),
    ],
)
def test_bad_preemption_arguments_are_named(kwargs, match):
    args = dict(step_times_per_rank=[0.1], envs_per_rank=1, num_steps=4, learn_time=0.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        optimal_preemption_steps(**args)


def test_collect_time_rejects_steps_beyond_the_buffers():
    with pytest.raises(ValueError, match=r"total_steps=9 is not allowed: .*\[0, T\*N\*R=8\]"):
        estimated_collect_time(9, [0.1, 0.2], 1, 4)


def _brute_force_objective(times, envs, steps, learn_time):
    """S / (Time(S) + LT) for every S in 1..T*N*R, Time from a separate formula.

    The collected steps g(tau) = sum_r min(TN, N tau / t_r) equal the minimum
    over rank subsets A of |A| TN + tau * N * sum_{r not in A} 1 / t_r, so
    Time(S) = max over A (all ranks excluded) of (S - |A| TN) / (N sum 1/t_r).
    """
    times = np.asarray(times, dtype=np.float64)
    cap = steps * envs
    subsets = np.array(list(itertools.product([0, 1], repeat=len(times))), dtype=bool)
    subsets = subsets[~subsets.all(axis=1)]  # A = all ranks gives no bound on tau
    full = subsets.sum(axis=1) * cap
    rate = ((~subsets) * (envs / times)).sum(axis=1)
    grid = np.arange(1, cap * len(times) + 1, dtype=np.float64)
    collect = np.max((grid[:, None] - full[None, :]) / rate[None, :], axis=1)
    return grid, grid / (np.maximum(collect, 0.0) + learn_time)


@settings(max_examples=60, deadline=None)
@given(
    times=st.lists(st.floats(1e-3, 1.0), min_size=1, max_size=6),
    envs=st.integers(1, 4),
    steps=st.integers(1, 8),
    learn_time=st.floats(0.0, 2.0),
)
def test_returned_steps_maximise_the_objective_over_every_s(times, envs, steps, learn_time):
    plan = optimal_preemption_steps(times, envs, steps, learn_time)
    grid, objective = _brute_force_objective(times, envs, steps, learn_time)
    assert 1 <= plan.steps <= grid[-1]
    assert plan.steps_per_second >= objective.max() * (1 - 1e-9)
    assert plan.steps_per_second == pytest.approx(objective[plan.steps - 1], rel=1e-9)
    assert plan.collect_time == pytest.approx(
        estimated_collect_time(plan.steps, times, envs, steps), rel=1e-12
    )
