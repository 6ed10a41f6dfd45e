"""Multi-GPU VER: estimated optimal preemption and stale fill (pure functions).

VER (Wijmans et al. 2022, section 2.3) replaces DD-PPO's fixed preemption
threshold by an estimate of the optimal one.  With ``R`` ranks, ``N`` envs per
rank and a rollout of ``T`` steps per env, the steps ``S`` to collect across
all ranks before preempting the stragglers solve

    max_S  S / (Time(S) + LT)   s.t.  S <= T * N * R

where ``LT`` is the previous update's learning time and ``Time(S)`` the time
needed to collect ``S`` steps, estimated from each rank's mean per-env step
time ``t_r`` (simulation and inference) in the previous rollout.  Rank ``r``
receives a step every ``t_r / N`` seconds and its buffer holds ``T * N``
steps, so by time ``tau`` it has collected ``min(T * N, N * tau / t_r)``
steps; a rank never contributes more than its buffer, whatever its speed.
``Time(S)`` is the smallest ``tau`` with ``sum_r min(T * N, N * tau / t_r) >= S``.

Why only a few candidates need checking: the collection curve is piecewise
linear, with a kink where rank ``r`` fills its buffer (``tau = T * t_r``).
Between kinks ``Time(S) = (S - C) / rate`` (``C``: steps of the full ranks,
``rate``: summed rate of the others), so the objective
``rate * S / (S - C + rate * LT)`` is monotone on each piece (its slope has the
sign of ``rate * LT - C``) and the best integer ``S`` lies next to a kink.

Stale fill (same section): a preempted rank fills the rest of its batch with
the previous rollout's most recent experience and runs the extra PPO epochs on
it; that is the storage's (:mod:`habitat_ver.storage.stale_fill`).
"""

import math
from typing import NamedTuple, Sequence, Union

import torch

from habitat_ver.common.checks import check_int, is_int

StepTimes = Union[Sequence[float], torch.Tensor]

# Relative tolerance under which two objective values count as a tie; ties go
# to the larger S (as much experience per update for the same throughput).
_TIE_RTOL = 1e-12


class PreemptionPlan(NamedTuple):
    """The estimated optimal preemption of one rollout.

    Ranks stop collecting once S steps arrived across all of them (counted,
    e.g., in the process group's store): a count, unlike a deadline at
    Time(S), holds even where the step-time estimate is off.

    Attributes:
        steps: S, steps to collect across all ranks before preempting.
        collect_time: Time(S), estimated seconds to collect them.
        steps_per_second: S / (Time(S) + LT), the maximised objective.
    """

    steps: int
    collect_time: float
    steps_per_second: float


class _Curve(NamedTuple):
    """The collection curve's pieces, fastest rank first (length R each)."""

    start_time: torch.Tensor  # tau where piece k starts (rank k-1 fills), s
    start_steps: torch.Tensor  # steps collected at that time
    rate: torch.Tensor  # steps/s of the ranks still collecting on piece k
    end_steps: torch.Tensor  # steps collected when piece k ends (rank k fills)
    max_steps: int  # T * N * R


def _curve(step_times_per_rank: StepTimes, envs_per_rank: int, num_steps: int) -> _Curve:
    """Validates the arguments and builds the collection curve's pieces."""
    check_int("envs_per_rank", envs_per_rank, 1)
    check_int("num_steps", num_steps, 1)
    times = torch.as_tensor(step_times_per_rank, dtype=torch.float64)
    if times.dim() != 1 or times.numel() == 0:
        raise ValueError(
            f"step_times_per_rank has shape {tuple(times.shape)}: must be 1-D "
            "with one mean per-env step time per rank"
        )
    if not bool(torch.all(torch.isfinite(times) & (times > 0))):
        raise ValueError(
            f"step_times_per_rank={times.tolist()} is not allowed: every step "
            "time must be finite and > 0 seconds"
        )
    times, _ = torch.sort(times)
    capacity = num_steps * envs_per_rank
    rank_rate = envs_per_rank / times
    # rate[k] = sum_{j >= k} N / t_j: ranks k.. are still collecting on piece k.
    rate = torch.flip(torch.cumsum(torch.flip(rank_rate, [0]), 0), [0])
    later_rate = torch.cat([rate[1:], rate.new_zeros(1)])
    ranks = torch.arange(times.numel(), dtype=torch.float64)
    # At tau = T * t_k ranks 0..k are full and the later ones hold N*tau/t_j;
    # counting rank k as exactly `capacity` keeps the last end exactly T*N*R.
    end_steps = (ranks + 1) * capacity + num_steps * times * later_rate
    zero = times.new_zeros(1)
    start_time = torch.cat([zero, num_steps * times[:-1]])
    start_steps = torch.cat([zero, end_steps[:-1]])
    return _Curve(start_time, start_steps, rate, end_steps, capacity * times.numel())


def _collect_times(curve: _Curve, steps: torch.Tensor) -> torch.Tensor:
    """Time(S) for every S in ``steps`` (float64, in [0, max_steps])."""
    piece = torch.searchsorted(curve.end_steps, steps)
    piece = piece.clamp(max=curve.end_steps.numel() - 1)  # rounding at the top end
    elapsed = (steps - curve.start_steps[piece]) / curve.rate[piece]
    return curve.start_time[piece] + elapsed


def estimated_collect_time(
    total_steps: int,
    step_times_per_rank: StepTimes,
    envs_per_rank: int,
    num_steps: int,
) -> float:
    """Time(S): seconds for all ranks together to collect ``total_steps``.

    The smallest ``tau`` with ``sum_r min(T * N, N * tau / t_r) >= S`` (VER
    section 2.3; see the module docstring).

    Args:
        total_steps: S, in ``[0, T * N * R]``.
        step_times_per_rank: ``t_r``, each rank's mean per-env step time in the
            previous rollout (inference included), seconds.  Shape ``(R,)``.
        envs_per_rank: N.
        num_steps: T, the rollout length per env (a rank's buffer is T * N).

    Returns:
        The estimated collection time, seconds.

    Raises:
        ValueError: on a bad argument, naming it and what is allowed.
    """
    curve = _curve(step_times_per_rank, envs_per_rank, num_steps)
    if not is_int(total_steps) or not 0 <= total_steps <= curve.max_steps:
        raise ValueError(
            f"total_steps={total_steps!r} is not allowed: must be an integer in "
            f"[0, T*N*R={curve.max_steps}]"
        )
    steps = torch.tensor([float(total_steps)], dtype=torch.float64)
    return float(_collect_times(curve, steps)[0])


def optimal_preemption_steps(
    step_times_per_rank: StepTimes,
    envs_per_rank: int,
    num_steps: int,
    learn_time: float,
) -> PreemptionPlan:
    """VER's estimated optimal preemption: ``argmax_S S / (Time(S) + LT)``.

    VER section 2.3.  Candidates are the integers either side of every kink of
    the collection curve (where a rank's buffer fills), which contain the
    optimum because the objective is monotone between kinks.  Ties go to the
    larger S.  A single rank, or ranks of equal speed, collect everything.

    Args:
        step_times_per_rank: ``t_r``, each rank's mean per-env step time in the
            previous rollout (inference included), seconds.  Shape ``(R,)``.
        envs_per_rank: N.
        num_steps: T, the rollout length per env (a rank's buffer is T * N).
        learn_time: LT, the previous update's learning time, seconds (>= 0).

    Returns:
        The plan: S (``1 <= S <= T * N * R``), Time(S) and the objective.

    Raises:
        ValueError: on a bad argument, naming it and what is allowed.
    """
    try:
        seconds = float(learn_time)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(
            f"learn_time={learn_time!r} is not allowed: must be a finite number >= 0 seconds"
        )
    curve = _curve(step_times_per_rank, envs_per_rank, num_steps)
    ends = curve.end_steps
    candidates = torch.cat([ends.new_ones(1), torch.floor(ends), torch.ceil(ends)])
    candidates = torch.unique(candidates.clamp(1, curve.max_steps))
    times = _collect_times(curve, candidates)
    objective = candidates / (times + seconds)
    best = objective.max()
    chosen = int(torch.nonzero(objective >= best * (1 - _TIE_RTOL)).max())
    return PreemptionPlan(
        steps=int(candidates[chosen]),
        collect_time=float(times[chosen]),
        steps_per_second=float(objective[chosen]),
    )
