"""Console progress of a training run: a bar while it runs, a summary at the end.

Only rank 0 shows anything.  The bar counts environment steps towards
``total_num_steps`` (or updates towards ``num_updates``) and shows steps/s and
the windowed mean episode reward.  While it is shown, habitat's and
habitat-baselines' console log lines go through ``tqdm.write``, which clears
the bar, prints the line and draws the bar again below it: a line written
while the bar was drawn used to start at the end of the bar's line.
"""

import contextlib
import logging
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, Iterator, List, Optional, Sequence

from habitat import logger as habitat_logger
from habitat_baselines.common.logging import baselines_logger
from torch import Tensor
from tqdm import tqdm


@dataclass
class ProgressConfig:
    """``habitat_baselines.progress`` (a settings section, registered in
    :mod:`habitat_ver.registration`): console progress display of long runs
    (rank 0 only)."""

    # Show a progress bar with steps, steps/s and reward; off for plain logs.
    enabled: bool = True
    # Minimum seconds between two refreshes of the bar.
    refresh_seconds: float = 0.5


# The loggers whose console lines pass above the bar: habitat-lab's (ours and
# upstream's trainers log there) and habitat-baselines'.
BAR_LOGGERS = (habitat_logger, baselines_logger)


@dataclass
class RunSummary:
    """What a finished (or stopped) run reports."""

    steps: int
    updates: int
    seconds: float
    mean_sps: float
    final_reward: Optional[float]
    checkpoint_folder: str
    tensorboard_dir: str
    log_file: str
    stopped_early: bool = False
    # The PNG of return and steps/s against steps (None: nothing was logged).
    learning_curve: Optional[str] = None
    notes: List[str] = field(default_factory=list)

    def render(self) -> str:
        reward = "n/a" if self.final_reward is None else f"{self.final_reward:.3f}"
        status = "stopped before its budget" if self.stopped_early else "finished"
        lines = [
            f"Training {status}: {self.steps} steps in {self.updates} updates, "
            f"{self.seconds:.1f} s",
            f"  mean steps/s : {self.mean_sps:.1f}",
            f"  final reward : {reward} (mean episode return over the reward window)",
            f"  checkpoints  : {self.checkpoint_folder}",
            f"  tensorboard  : {self.tensorboard_dir}",
            f"  log file     : {self.log_file}",
        ]
        if self.learning_curve is not None:
            lines.append(f"  learning curve: {self.learning_curve}")
        lines += [f"  {note}" for note in self.notes]
        return "\n".join(lines)


class RunProgress:
    """A tqdm bar over environment steps (or updates)."""

    def __init__(
        self,
        total: float,
        unit: str,
        initial: float,
        enabled: bool,
        refresh_seconds: float,
    ):
        self._bar = None
        self._redirect = contextlib.ExitStack()
        if enabled:
            self._redirect.enter_context(log_lines_above_bar(BAR_LOGGERS))
            self._bar = tqdm(
                total=int(total),
                initial=int(initial),
                unit=unit,
                unit_scale=True,
                dynamic_ncols=True,
                mininterval=refresh_seconds,
                file=sys.stderr,
            )
        self._position = initial
        self._start = time.monotonic()

    def update(self, position: float, sps: float, reward: Optional[float]) -> None:
        if self._bar is None:
            return
        self._bar.update(int(position) - int(self._position))
        self._position = position
        postfix = {"sps": f"{sps:.0f}"}
        if reward is not None:
            postfix["reward"] = f"{reward:.2f}"
        self._bar.set_postfix(postfix, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._redirect.close()


class _AboveTheBar(logging.StreamHandler):
    """A console handler that writes through ``tqdm.write``: the bar is
    cleared, the line printed and the bar drawn again below it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=self.stream)
        except (OSError, ValueError):  # a closed console: report, as logging does
            self.handleError(record)


@contextlib.contextmanager
def log_lines_above_bar(loggers: Sequence[logging.Logger]) -> Iterator[None]:
    """Within the block, the console handlers of ``loggers`` (stream handlers,
    not file handlers) write above the progress bar; restored after."""
    saved = [(log, list(log.handlers)) for log in loggers]
    try:
        for log in loggers:
            log.handlers = [_above_the_bar(h) for h in log.handlers]
        yield
    finally:
        for log, handlers in saved:
            log.handlers = handlers


def _above_the_bar(handler: logging.Handler) -> logging.Handler:
    if type(handler) is not logging.StreamHandler:  # a FileHandler, anything else
        return handler
    above = _AboveTheBar(handler.stream)
    above.setLevel(handler.level)
    above.setFormatter(handler.formatter)
    for log_filter in handler.filters:
        above.addFilter(log_filter)
    return above


def window_mean_reward(window_episode_stats: Dict[str, Deque[Tensor]]) -> Optional[float]:
    """Mean return of the episodes finished within upstream's reward window.

    Args:
        window_episode_stats: upstream's windows of cumulative per-env
            ``reward`` and ``count`` (oldest first).
    """
    rewards = window_episode_stats.get("reward")
    counts = window_episode_stats.get("count")
    if not rewards or not counts:
        return None
    if len(rewards) > 1:
        reward = (rewards[-1] - rewards[0]).sum().item()
        count = (counts[-1] - counts[0]).sum().item()
    else:
        reward, count = rewards[0].sum().item(), counts[0].sum().item()
    return reward / count if count > 0 else None


def progress_bar(config: Any, position: float, enabled: bool, settings: Any) -> RunProgress:
    """The bar of a run of ``config``: steps towards ``total_num_steps``, or
    updates towards ``num_updates`` when that is -1.

    Args:
        position: steps (or updates) already done (a resumed run).
        enabled: show it (rank 0 only).
        settings: ``habitat_baselines.progress`` (``enabled``, ``refresh_seconds``).
    """
    baselines = config.habitat_baselines
    by_steps = baselines.total_num_steps != -1
    return RunProgress(
        total=baselines.total_num_steps if by_steps else baselines.num_updates,
        unit="step" if by_steps else "update",
        initial=position,
        enabled=bool(settings.enabled) and enabled,
        refresh_seconds=settings.refresh_seconds,
    )
