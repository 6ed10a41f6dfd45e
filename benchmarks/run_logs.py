"""What the benchmark scripts read from a training run: one place for the log keys.

Our trainers (and habitat-baselines' own) write TensorBoard scalars;
:func:`read_run` maps their tags, old and new names alike, to a few canonical
series (:data:`KEYS`), so a renaming of our keys (now namespaced as
``learner/...`` and ``system/...``) touches only that table.  Upstream's
``ver`` logs its timings as text only; :func:`read_run` reads those lines too.
The rest of the module is pure arithmetic on the series (steady rate, the
collection/learning split), unit-tested in ``tests/benchmarks``.
"""

import math
import re
from typing import Dict, List, Optional, Sequence, Tuple

# canonical name -> the scalar tags that carry it, first found wins: the
# namespaced names (``habitat_ver/common/log_keys.py``) first, then
# the older ones (``perf/*``, and ``system/time/*`` of the namespaced trainers, are
# habitat's ``g_timer`` running means: upstream ddppo and our ddppo time
# ``trainer.update_agent``, upstream ddppo ``trainer.rollout_collect``).
KEYS: Dict[str, Tuple[str, ...]] = {
    "sps": ("system/sps", "perf/fps"),
    "reward": ("reward",),
    # Episode metrics over the reward window (habitat's ``metrics/<info key>``).
    "success": ("metrics/success",),
    "spl": ("metrics/spl",),
    "collect_s": (
        "system/collect_seconds",
        "system/time/trainer.rollout_collect",
        "perf/trainer.rollout_collect",
    ),
    "learn_s": (
        "system/learn_seconds",
        "system/time/trainer.update_agent",
        "perf/trainer.update_agent",
    ),
    # Our trainers' torch threads per update (learner.num_threads, `auto`'s choice).
    "learner_threads": ("system/learner_threads",),
}
# Series returned as ``<name>_curve`` by :func:`summarize` (reward always).
CURVES = ("reward", "success", "spl")
# Tags whose value is a running mean over the whole run (read: the last one);
# every other tag is one update's value (read: the mean over steady updates).
RUNNING_MEAN_PREFIXES = ("perf/", "system/time/", "log:")
# Upstream ver's text log, once per log_interval: "learner: learn: 512.3ms  ..."
# (entries "name: value" joined by two spaces), its learner's seconds per
# update as a running mean.  Its "policy: ... rollout" is not read: it is the
# mean over its inference workers' own loops (one per process), not the
# learner's wait for a rollout; collection is the rest of the update.
_UPSTREAM_TIMING = {"learn_s": re.compile(r"learner: (?:.*?  )?learn: ([0-9.]+)ms")}
# That mean runs over its reward window (rl.ppo.reward_window_size, 50 in our
# configs) of samples: de-averaged only while the window holds every sample.
UPSTREAM_WINDOW_UPDATES = 50
# Updates left out of the steady rate: the first logged update closes the
# rollout that waited for env start-up, so steady counts from the next one.
WARMUP_UPDATES = 1

Point = Tuple[float, float, float]  # (step, value, wall time in s)
Series = Dict[str, Tuple[str, List[Point]]]  # canonical -> (tag, points)


def _canonical_tag(tag: str) -> str:
    # Our losses dict goes through upstream's `learner/{key}` prefix, so a
    # `system/...` entry in it lands as `learner/system/...`.
    return tag[len("learner/") :] if tag.startswith("learner/system/") else tag


def read_scalars(tb_dir: str) -> Dict[str, List[Point]]:
    """Every scalar of a TensorBoard folder: ``{tag: [(step, value, wall time), ...]}``,
    points in step order."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(tb_dir, size_guidance={"scalars": 0})  # 0: keep every point
    events.Reload()
    scalars: Dict[str, List[Point]] = {}
    for tag in events.Tags().get("scalars", []):
        points = [(float(e.step), float(e.value), float(e.wall_time)) for e in events.Scalars(tag)]
        scalars[tag] = sorted(points)
    return scalars


def read_run(tb_dir: Optional[str] = None, log_text: str = "") -> Series:
    """The canonical series of one run, from its TensorBoard folder and/or text log.

    Args:
        tb_dir: the run's ``habitat_baselines.tensorboard_dir`` (None: skip).
        log_text: the run's log (stderr); only upstream ver's timing lines are
            read from it, where TensorBoard has no timing.

    Returns:
        ``{canonical: (tag it came from, [(step, value, wall time), ...])}``
        for every name of :data:`KEYS` found, points in step order.
    """
    scalars: Dict[str, List[Point]] = {}
    if tb_dir is not None:
        scalars = {_canonical_tag(tag): points for tag, points in read_scalars(tb_dir).items()}
    found: Series = {}
    for name, tags in KEYS.items():
        for tag in tags:
            if scalars.get(tag):
                found[name] = (tag, scalars[tag])
                break
    for name, pattern in _UPSTREAM_TIMING.items():
        values = [float(v) / 1000.0 for v in pattern.findall(log_text)]
        if values and name not in found:
            found[name] = (f"log:{pattern.pattern}", [(-1.0, v, math.nan) for v in values])
    return found


def steady_window(
    points: Sequence[Tuple[float, float]], first: int = WARMUP_UPDATES
) -> Tuple[Tuple[float, float], Tuple[float, float]]:
    """The steady window: from logged point ``first`` to the last one.

    Args:
        points: ``(wall time s, steps done)`` per logged update, in order.
        first: index of the point the steady window starts at (the ones before
            are start-up).

    Returns:
        ``((start time, steps), (end time, steps))``; with fewer than two
        points from ``first`` on, from the first point.

    Raises:
        ValueError: when fewer than two points are given, or times do not increase.
    """
    if len(points) < 2:
        raise ValueError(f"a steady rate needs two logged updates, got {len(points)}")
    start = min(first, len(points) - 2)
    (t0, s0), (t1, s1) = points[start], points[-1]
    if t1 <= t0:
        raise ValueError(f"logged times do not increase: {t0} then {t1}")
    return (t0, s0), (t1, s1)


def steady_rate(points: Sequence[Tuple[float, float]], first: int = WARMUP_UPDATES) -> float:
    """Steps/s over :func:`steady_window`:
    ``(steps[-1] - steps[first]) / (time[-1] - time[first])``."""
    (t0, s0), (t1, s1) = steady_window(points, first)
    return (s1 - s0) / (t1 - t0)


def steady_of_running_mean(
    means: Sequence[float], first: int = WARMUP_UPDATES, window: Optional[int] = None
) -> float:
    """The mean of the samples after the first ``first`` logged updates, from
    running means logged once an update (each adding the same number of samples).

    ``m_n`` is the mean of the first ``n`` updates' samples, so those of
    updates ``first+1 .. n`` average ``(n * m_n - first * m_first) / (n - first)``.
    Past ``window`` logged updates the running mean has dropped the start-up
    samples itself and ``m_n`` is returned, as with too few points.
    """
    n = len(means)
    if n <= first or first < 1 or (window is not None and n > window):
        return means[-1]
    return (n * means[-1] - first * means[first - 1]) / (n - first)


def _timing(series: Series, name: str, steady_from: float) -> Optional[float]:
    if name not in series:
        return None
    tag, points = series[name]
    if tag.startswith(RUNNING_MEAN_PREFIXES):
        window = UPSTREAM_WINDOW_UPDATES if tag.startswith("log:") else None
        return steady_of_running_mean([v for _, v, _ in points], WARMUP_UPDATES, window)
    steady = [v for step, v, _ in points if step >= steady_from] or [v for _, v, _ in points]
    return sum(steady) / len(steady)


def split(
    update_s: float, collect_s: Optional[float], learn_s: Optional[float]
) -> Dict[str, Optional[float]]:
    """Collection and learning seconds per update and their shares of its wall time.

    A missing one is the rest of the update's wall time (exact without
    overlap; with overlap both are logged, and shares may add up to over 1).

    Args:
        update_s: wall seconds per update (steps per update / steady steps/s).
        collect_s: collection seconds per update, or None if not logged.
        learn_s: learning seconds per update, or None if not logged.

    Returns:
        ``collect_s``, ``learn_s``, ``collect_share``, ``learn_share`` (None
        when neither is logged) and ``split_from`` (what was logged).
    """
    logged = [n for n, v in (("collect", collect_s), ("learn", learn_s)) if v is not None]
    if collect_s is None and learn_s is not None:
        collect_s = max(update_s - learn_s, 0.0)
    if learn_s is None and collect_s is not None:
        learn_s = max(update_s - collect_s, 0.0)
    if collect_s is None or learn_s is None:
        return dict(
            collect_s=None, learn_s=None, collect_share=None, learn_share=None, split_from=[]
        )
    return dict(
        collect_s=collect_s,
        learn_s=learn_s,
        collect_share=collect_s / update_s,
        learn_share=learn_s / update_s,
        split_from=logged,
    )


def summarize(series: Series) -> Dict[str, object]:
    """Steady steps/s, the collection/learning split and the return curve of one run.

    Args:
        series: :func:`read_run`'s result; needs ``sps`` (its points' steps
            and wall times are the step counter of every logged update).

    Returns:
        ``steady_sps``, ``steady_window`` (``[start wall time, end wall
        time, env steps between]``, for :mod:`process_cpu`), ``mean_sps``
        (the trainer's own: steps over its wall time, start-up included), ``steps``,
        ``steps_per_update``,
        ``update_s``, the keys of :func:`split`, ``collect_sps`` (steps per
        update / collection seconds), ``reward_curve`` ([[step, return]]),
        ``success_curve`` and ``spl_curve`` where logged (same form),
        ``learner_threads`` (the mean over steady updates; None where not logged),
        ``final_reward`` and ``keys`` (the tag each series came from).
    """
    if "sps" not in series:
        raise ValueError(f"no steps/s series (tags {KEYS['sps']}) in the run's TensorBoard")
    points = series["sps"][1]
    (t0, s0), (t1, s1) = steady_window([(wall, step) for step, _, wall in points])
    steady_sps = (s1 - s0) / (t1 - t0)
    steps = [p[0] for p in points]
    deltas = sorted(b - a for a, b in zip(steps, steps[1:]))
    per_update = deltas[len(deltas) // 2] if deltas else steps[-1]  # median
    update_s = per_update / steady_sps
    steady_from = steps[min(WARMUP_UPDATES, len(steps) - 1)]
    parts = split(
        update_s, _timing(series, "collect_s", steady_from), _timing(series, "learn_s", steady_from)
    )
    collect = parts["collect_s"]
    curves = {
        f"{name}_curve": [[p[0], p[1]] for p in series[name][1]]
        for name in CURVES
        if name in series
    }
    reward = curves.setdefault("reward_curve", [])
    return dict(
        steady_sps=steady_sps,
        steady_window=[t0, t1, s1 - s0],
        mean_sps=points[-1][1],
        steps=steps[-1],
        steps_per_update=per_update,
        update_s=update_s,
        **parts,
        collect_sps=per_update / collect if collect else None,
        learner_threads=_timing(series, "learner_threads", steady_from),
        **curves,
        final_reward=reward[-1][1] if reward else None,
        keys={name: tag for name, (tag, _) in series.items()},
    )
