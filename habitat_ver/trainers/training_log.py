"""Per-update TensorBoard scalars and text log lines, one vocabulary.

Replaces habitat-baselines' ``PPOTrainer._training_log``, which writes every
loss under ``learner/`` (our system statistics too) and steps/s as
``perf/fps``.  The names are :mod:`habitat_ver.common.log_keys`'.
"""

from typing import Any, Dict, List

import numpy as np
from habitat import logger
from habitat_baselines.utils.timing import g_timer

from habitat_ver.common.log_keys import SPS, namespaced

__all__ = ["write_training_log", "wrapped_lines"]

# A text line longer than this continues on the next: with the logger's
# timestamp (24 characters) a line of the log stays within 300.
MAX_LINE_CHARS = 276


def window_means(window_episode_stats: Dict[str, Any]) -> Dict[str, float]:
    """Mean of each episode statistic over the reward window (upstream's deltas).

    Returns:
        ``{"reward": ..., <info key>: ..., "count": episodes in the window}``;
        with no episode yet every mean is 0.
    """
    deltas = {
        k: (v[-1] - v[0]).sum().item() if len(v) > 1 else v[0].sum().item()
        for k, v in window_episode_stats.items()
    }
    count = max(deltas.get("count", 0.0), 1.0)
    means = {k: v / count for k, v in deltas.items() if k != "count"}
    means["count"] = deltas.get("count", 0.0)
    return means


def write_training_log(
    trainer: Any, writer: Any, losses: Dict[str, float], sps: float, first: bool = False
) -> None:
    """TensorBoard scalars of this update; text lines every ``log_interval``
    updates and after the first update of a session (a HAB skill's default
    ``log_interval=10`` showed no update for the first 12 minutes on a CPU).

    Args:
        trainer: the trainer (reads its step/update counters, reward window,
            rank 0's env infos and config).
        writer: TensorBoard writer.
        losses: this update's ``learner/...`` and ``system/...`` values.
        sps: env steps per second since the run began.
        first: this is the session's first update (a resumed run's too).
    """
    step = trainer.num_steps_done
    means = window_means(trainer.window_episode_stats)
    scalars = {"reward": means.get("reward", 0.0)}
    scalars.update({f"metrics/{k}": v for k, v in means.items() if k not in ("reward", "count")})
    scalars.update({namespaced(k): v for k, v in losses.items()})
    scalars[SPS] = sps
    scalars.update({f"system/time/{k}": v.mean for k, v in g_timer.items()})
    for tag, value in scalars.items():
        writer.add_scalar(tag, value, step)
    infos = trainer._single_proc_infos  # upstream's name, kept for its flag
    for k, v in infos.items():
        writer.add_scalar(k, np.mean(v), step)

    baselines = trainer.config.habitat_baselines
    if trainer.num_updates_done % baselines.log_interval != 0 and not first:
        return
    logger.info(f"update: {trainer.num_updates_done}\tsteps: {int(step)}\t{SPS}: {sps:.3f}")
    # The means are differences of cumulative snapshots: n snapshots span
    # n - 1 updates (a single one, the run's first update).
    window = max(len(trainer.window_episode_stats["count"]) - 1, 1)
    episodes = {k: v for k, v in scalars.items() if k == "reward" or k.startswith("metrics/")}
    head = f"window of {window} updates, {int(means['count'])} episodes: "
    for line in wrapped_lines(episodes, ".3f", head):
        logger.info(line)
    for space in ("learner/", "system/"):
        in_space = {k: v for k, v in scalars.items() if k.startswith(space)}
        for line in wrapped_lines(in_space, ".4g"):
            logger.info(line)
    if baselines.should_log_single_proc_infos:
        for k, v in infos.items():
            logger.info(f" - {k}: {np.mean(v):.3f}")


def wrapped_lines(
    values: Dict[str, float], fmt: str, head: str = "", max_chars: int = MAX_LINE_CHARS
) -> List[str]:
    """``key: value`` pairs two spaces apart, ``head`` first, in as few lines
    as keep each within ``max_chars`` (a pair longer than that gets a line of
    its own); a later line starts with two spaces."""
    lines: List[str] = []
    line, pairs_in_line = head, 0
    for key, value in values.items():
        pair = f"{key}: {value:{fmt}}"
        if pairs_in_line and len(line) + 2 + len(pair) > max_chars:
            lines.append(line)
            line, pairs_in_line = "  ", 0
        line += ("  " if pairs_in_line else "") + pair
        pairs_in_line += 1
    lines.append(line)
    return lines
