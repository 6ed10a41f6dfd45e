"""The scheduling heuristics, behind the one interface the training loop calls
(:class:`Scheduler`): the CPU learner's threads, and VER's wait for the env
steps in flight before a lock-step update.

**Learner threads**: the cores that idle envs, and nobody else, leave free.
Under ``habitat_baselines.force_torch_single_threaded`` (upstream's default,
which we also apply on the CPU: :func:`habitat_ver.run.execute_exp`) torch runs
one thread, so that inference and the learner leave the cores to the env
workers.  During a lock-step update (``ddppo``; ``ver`` when it does not
overlap) no env steps, and one thread leaves the other cores idle, so the
update may take more.  ``appo`` and overlapped ``ver`` collect while they
learn and keep one thread.

But a multi-threaded update shares its cores badly: beside another process
running multi-threaded torch on the same cores (a second run's learner), it
can take many times longer than one thread (``benchmarks/learner_contention.py``,
docs/BENCHMARKS.md).  So ``habitat_baselines.learner.num_threads``
is ``auto`` by default, and :class:`LearnerThreads` decides before every
lock-step update (:func:`choose_threads`):

* the cores nobody else uses: the runnable threads of other processes are read
  from ``/proc/loadavg`` a few times just before the update (the fewest seen
  counts, so a blip does not), and the update gets at most the cores they leave
  (the share of :func:`cores_per_process`, never fewer than one);
* a multi-threaded update slower than the fastest one-thread update seen, or
  :data:`COLLAPSE_FACTOR` times the fastest multi-threaded one, means a
  neighbour the sampling missed: the next :data:`COOLDOWN_UPDATES` updates run
  one thread (:func:`collapsed`).

The count is logged per update as ``system/learner_threads``, and each change
of choice as one log line with its reason.

**Settle**: when a rollout fills under ``ver`` without overlap, the actions in
flight keep env workers stepping as the update starts, and the threads'
choice would find the cores taken.  :meth:`Scheduler.before_learn` first
waits for those steps (the caller holds their results for the next rollout
and counts the wait as collection), at most :data:`SETTLE_SHARE` of the last
update's learning time and at most what learning on several threads has
saved so far; a wait that runs out (a straggler still stepping) pauses
waiting for :data:`SETTLE_PAUSE_UPDATES` updates.
"""

import contextlib
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Iterator, Optional, Tuple

import torch
from habitat import logger

from habitat_ver.common.checks import AUTO
from habitat_ver.config.errors import check
from habitat_ver.config.schema import section_or_default

KEY = "habitat_baselines.learner.num_threads"


@dataclass
class LearnerConfig:
    """``habitat_baselines.learner`` (a settings section, registered in
    :mod:`habitat_ver.registration`): the CPU learner's threads during
    lock-step updates (ddppo; ver without overlap)."""

    # "auto": the cores of this process's share that no other program's runnable
    # threads use, checked before every update, and one thread for a while after
    # a multi-threaded update was slower than one thread (LearnerThreads);
    # an integer n >= 1: always n threads (1: never more than inference's one).
    num_threads: Any = AUTO


def learner_num_threads(config: Any) -> Any:
    """``habitat_baselines.learner.num_threads`` (or its default, ``auto``)."""
    return section_or_default(config, "learner", LearnerConfig).num_threads


def check_learner_threads(config: Any) -> None:
    """``habitat_baselines.learner.num_threads``: ``auto`` or an integer >= 1."""
    section = config.habitat_baselines.get("learner")
    if section is None:
        return
    try:
        parse_setting(section.num_threads)
    except ValueError:
        check(False, KEY, section.num_threads, f"'{AUTO}' or an integer >= 1")


# Reads of the runnable count before an update, and the seconds between them.
RUNNABLE_SAMPLES = 5
RUNNABLE_GAP_S = 0.002
# A multi-threaded update this many times slower than the fastest one is a
# collapse: well above the spread of one run's update times, well below a
# collapse's slow-down.
COLLAPSE_FACTOR = 2.0
# One-thread updates after a collapse before multi-threading is tried again.
COOLDOWN_UPDATES = 10
# Of the last update's learning time, how long a lock-step update may wait for
# the env steps in flight before it starts (Scheduler.before_learn).
SETTLE_SHARE = 0.25
# Updates without that wait after one ran out of time.
SETTLE_PAUSE_UPDATES = 20


def cores_per_process() -> int:
    """This process's share of the cores it may run on: the usable cores over
    the processes of the run on this machine (torchrun's ``LOCAL_WORLD_SIZE``,
    else the world size of an initialised process group, else 1)."""
    return max(1, usable_cores() // local_processes())


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def local_processes() -> int:
    """The processes of this run on this machine (see :func:`cores_per_process`)."""
    local = os.environ.get("LOCAL_WORLD_SIZE")
    if local is not None:
        return max(1, int(local))
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return max(1, torch.distributed.get_world_size())
    return 1


def runnable_now() -> Optional[int]:
    """Runnable threads on the machine now, this one included (the first number
    of ``/proc/loadavg``'s fourth field); None where that file is missing."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return None


def other_runnable(
    read: Callable[[], Optional[int]] = runnable_now,
    samples: int = RUNNABLE_SAMPLES,
    gap_s: float = RUNNABLE_GAP_S,
) -> int:
    """The fewest runnable threads besides this one over ``samples`` reads
    ``gap_s`` apart (0 where the count cannot be read)."""
    seen = []
    for i in range(samples):
        if i:
            time.sleep(gap_s)
        count = read()
        if count is None:
            return 0
        seen.append(max(0, count - 1))
    return min(seen)


@dataclass(frozen=True)
class ThreadChoice:
    """Threads for one update, and why (for the log line)."""

    threads: int
    reason: str
    # What decided it: "fixed", "one_core", "collapsed", "busy" or "idle"
    # (a log line is written when threads or kind change).
    kind: str = "idle"


def choose_threads(
    share: int, cores: int, others: int, own_others: int, cooldown_left: int
) -> ThreadChoice:
    """``auto``'s threads for the next lock-step update.

    Args:
        share: this process's share of the cores (:func:`cores_per_process`).
        cores: the cores this process may run on.
        others: runnable threads of other processes just before the update.
        own_others: of those, how many this run's other local ranks may
            account for (their own updates: ``(processes - 1) * share``).
        cooldown_left: one-thread updates still due after a collapse.

    Returns:
        ``share`` threads at most, at least one: only the cores that neither
        another program nor this run's other ranks use.
    """
    if share <= 1:
        return ThreadChoice(1, "one core for this process", "one_core")
    if cooldown_left > 0:
        return ThreadChoice(
            1, f"a multi-threaded update collapsed ({cooldown_left} more)", "collapsed"
        )
    strangers = max(0, others - own_others)
    free = cores - strangers
    if free <= 1:
        return ThreadChoice(1, f"{strangers} other runnable thread(s) on {cores} cores", "busy")
    if free < share:
        return ThreadChoice(free, f"{strangers} other runnable thread(s) on {cores} cores", "busy")
    return ThreadChoice(share, "the cores are idle")


def collapsed(
    threads: int, seconds: float, best_single_s: Optional[float], best_multi_s: Optional[float]
) -> bool:
    """Whether a multi-threaded update of ``seconds`` was slower than one
    thread has been (``best_single_s``), or :data:`COLLAPSE_FACTOR` times the
    fastest multi-threaded update before it (``best_multi_s``)."""
    if threads <= 1:
        return False
    if best_single_s is not None and seconds > best_single_s:
        return True
    return best_multi_s is not None and seconds > COLLAPSE_FACTOR * best_multi_s


def _fastest(best: Optional[float], seconds: float) -> float:
    return seconds if best is None else min(best, seconds)


def _seconds(value: Optional[float]) -> str:
    return "none" if value is None else f"{value:.2f} s"


def parse_setting(value: Any) -> Optional[int]:
    """``learner.num_threads`` as a fixed count, or None for ``auto``.

    Raises:
        ValueError: neither ``auto`` nor an integer >= 1.
    """
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ValueError(f"{KEY}={value!r}: '{AUTO}' or an integer >= 1")


class LearnerThreads:
    """Threads of the CPU learner's lock-step updates (one per trainer).

    Args:
        setting: ``habitat_baselines.learner.num_threads`` (``auto`` or n >= 1).
        read_runnable: where the runnable count comes from (default
            :func:`runnable_now`; tests pass numbers).
    """

    def __init__(
        self, setting: Any = AUTO, read_runnable: Optional[Callable[[], Optional[int]]] = None
    ):
        self.fixed = parse_setting(setting)
        self._read_runnable = read_runnable
        self.best_single_s: Optional[float] = None
        self.best_multi_s: Optional[float] = None
        self.cooldown_left = 0
        self._last_announced: Optional[Tuple[int, str]] = None
        # Threads the last update ran with (logged as system/learner_threads).
        self.last_threads = 1

    @staticmethod
    def _chooses(device: torch.device) -> bool:
        """Whether :meth:`update` sets the threads on ``device``: a
        single-threaded CPU learner (elsewhere it leaves them as they are)."""
        return device.type == "cpu" and torch.get_num_threads() == 1

    def may_take_several(self, device: torch.device) -> bool:
        """Whether a lock-step update on ``device`` may learn on more than one thread."""
        if not self._chooses(device):
            return False
        return self.fixed > 1 if self.fixed is not None else cores_per_process() > 1

    def multi_thread_gain(self) -> Optional[float]:
        """Seconds the fastest multi-threaded update saved over the fastest
        single-threaded one (None until both were seen; <= 0: no gain)."""
        if self.best_single_s is None or self.best_multi_s is None:
            return None
        return self.best_single_s - self.best_multi_s

    def next_choice(self) -> ThreadChoice:
        """The threads for the next lock-step update."""
        if self.fixed is not None:
            return ThreadChoice(self.fixed, f"{KEY}={self.fixed}", "fixed")
        share, processes = cores_per_process(), local_processes()
        others = other_runnable(self._read_runnable or runnable_now) if share > 1 else 0
        return choose_threads(
            share, usable_cores(), others, (processes - 1) * share, self.cooldown_left
        )

    def record(self, threads: int, seconds: float) -> None:
        """After an update: the fastest times so far, and a collapse's cooldown."""
        if self.cooldown_left > 0:
            self.cooldown_left -= 1
        if self.fixed is None and collapsed(
            threads, seconds, self.best_single_s, self.best_multi_s
        ):
            self.cooldown_left = COOLDOWN_UPDATES
            logger.info(
                f"habitat_ver: a {threads}-thread update took {seconds:.2f} s (fastest "
                f"before: {_seconds(self.best_multi_s)} on threads, "
                f"{_seconds(self.best_single_s)} on one); the next {COOLDOWN_UPDATES} "
                "updates learn on one thread"
            )
        if threads <= 1:
            self.best_single_s = _fastest(self.best_single_s, seconds)
        else:
            self.best_multi_s = _fastest(self.best_multi_s, seconds)

    def _announce(self, choice: ThreadChoice) -> None:
        if (choice.threads, choice.kind) != self._last_announced:
            self._last_announced = (choice.threads, choice.kind)
            logger.info(
                f"habitat_ver: lock-step updates learn on {choice.threads} thread(s): "
                f"{choice.reason}"
            )

    @contextlib.contextmanager
    def update(self, envs_idle: bool, device: torch.device) -> Iterator[None]:
        """Within the block, a single-threaded CPU learner whose envs are idle
        uses :meth:`next_choice`'s threads; elsewhere nothing changes."""
        before = torch.get_num_threads()
        if not envs_idle or not self._chooses(device):
            self.last_threads = before
            yield
            return
        choice = self.next_choice()
        self._announce(choice)
        self.last_threads = choice.threads
        torch.set_num_threads(choice.threads)
        start = time.monotonic()
        try:
            yield
        finally:
            torch.set_num_threads(before)
        self.record(choice.threads, time.monotonic() - start)


class Scheduler:
    """What the training loop asks of the scheduling heuristics, at its phase
    boundaries (one per trainer): :meth:`before_learn` when a rollout is
    collected, then the update inside :meth:`learning`.

    Args:
        setting: ``habitat_baselines.learner.num_threads`` (``auto`` or n >= 1).
        read_runnable: see :class:`LearnerThreads`.
    """

    def __init__(
        self, setting: Any = AUTO, read_runnable: Optional[Callable[[], Optional[int]]] = None
    ):
        self.threads = LearnerThreads(setting, read_runnable)
        # The first update that may wait for the steps in flight.
        self.settle_resumes_at = 0

    @property
    def last_threads(self) -> int:
        """Threads the last update ran with (logged as ``system/learner_threads``)."""
        return self.threads.last_threads

    def before_learn(
        self,
        update: int,
        device: torch.device,
        envs_idle: bool,
        last_learn_s: float,
        settle: Optional[Callable[[float], bool]] = None,
    ) -> float:
        """Before update number ``update`` learns on ``device``: where the envs
        will idle and the learner may take several threads, wait for the env
        steps in flight through ``settle`` (it waits at most the seconds it is
        given and says whether they all arrived); ``last_learn_s`` is the last
        update's learning time.

        Returns:
            The seconds waited (collection time; 0 without a wait).
        """
        if settle is None or not envs_idle or not self.threads.may_take_several(device):
            return 0.0
        if update < self.settle_resumes_at:
            return 0.0
        cap = SETTLE_SHARE * last_learn_s
        gain = self.threads.multi_thread_gain()
        if gain is not None:
            cap = min(cap, gain)
        if cap <= 0:
            return 0.0
        start = time.monotonic()
        if not settle(cap):
            self.settle_resumes_at = update + SETTLE_PAUSE_UPDATES
        return time.monotonic() - start

    def learning(self, envs_idle: bool, device: torch.device) -> ContextManager[None]:
        """The update's block: a single-threaded CPU learner whose envs are
        idle learns on the threads :class:`LearnerThreads` chooses."""
        return self.threads.update(envs_idle, device)
