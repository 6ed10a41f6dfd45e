"""The ``ver`` trainer's own settings: their section, their checks, and what
``auto`` overlap decides.

Its config section is ``habitat_baselines.rl.ver`` (:class:`HabitatVerVERConfig`,
registered in :mod:`habitat_ver.registration`): upstream's, with
``overlap_rollouts_and_learn`` widened to ``auto`` and inference batching
(``min_batch_fraction``, ``max_wait_ms``) added.  Those two were
``habitat_baselines.ver_system.*`` before; the old keys still work, with a
one-line deprecation note (:func:`inference_batching`).

``habitat_baselines.rl.ver.overlap_rollouts_and_learn=auto``: before every
update the trainer decides whether the envs keep stepping while PPO learns,
from the update before it (off for the first): on when learning took at least
:data:`AUTO_LEARN_SHARE` of that update's wall time, *and* learning on one
thread beside the envs would still shorten the update where the last one
learnt on several (:func:`auto_overlaps`), *and* the run left at least
:data:`AUTO_SPARE_CORES` cores unused while the trainer waited for that
rollout (:mod:`habitat_ver.system.spare_cores`).  Overlap can hide at most the
learning share of an update, and costs a policy version of lag on the steps
collected meanwhile; below a quarter it is not worth that.  And it only gains
where collection leaves cores to the learner: envs that wait on rendering or
physics elsewhere, or a machine shared with other jobs (the scheduler gives a
run with more runnable threads a larger share).  Where the run's own env
workers already fill every core, learning beside them only takes their cores
and overlap is slower than plain ``ver`` (docs/BENCHMARKS.md).
"""

import math
from dataclasses import dataclass
from typing import Any, List, NamedTuple, Optional

from habitat_baselines.config.default_structured_configs import VERConfig

from habitat_ver.common.checks import AUTO, in_range, is_count
from habitat_ver.config.errors import check

__all__ = [
    "AUTO_LEARN_SHARE",
    "AUTO_SPARE_CORES",
    "OVERLAP_KEY",
    "HabitatVerVERConfig",
    "VERSystemConfig",
    "InferenceBatching",
    "auto_overlaps",
    "check_ver_settings",
    "inference_batching",
]

_RL_VER = "habitat_baselines.rl.ver"
_VER_SYSTEM = "habitat_baselines.ver_system"
OVERLAP_KEY = f"{_RL_VER}.overlap_rollouts_and_learn"


@dataclass
class HabitatVerVERConfig(VERConfig):
    """Upstream's ``rl.ver`` with ``overlap_rollouts_and_learn`` widened to ``auto``
    (upstream types it a bool) and the `ver` trainer's inference batching."""

    # True, False, or "auto" (on when learning took >= 25% of the last update,
    # one learner thread beside the envs would still shorten it, and the run
    # left >= 0.5 cores unused while its rollout was collected; auto_overlaps).
    overlap_rollouts_and_learn: Any = False
    # Inference waits for at least this fraction of the envs...
    min_batch_fraction: float = 0.25
    # ...but never longer than this, in milliseconds, after the first arrived.
    # 0 (the default): no wait; inference takes every result that arrived
    # while the last one ran.
    max_wait_ms: float = 0.0


@dataclass
class VERSystemConfig:
    """Deprecated ``habitat_baselines.ver_system``: its keys moved to
    ``habitat_baselines.rl.ver``; a value set here still wins, with a note."""

    # Deprecated: habitat_baselines.rl.ver.min_batch_fraction.
    min_batch_fraction: Optional[float] = None
    # Deprecated: habitat_baselines.rl.ver.max_wait_ms.
    max_wait_ms: Optional[float] = None


class InferenceBatching(NamedTuple):
    """How the `ver` trainer batches inference, and where each value was read."""

    min_batch_fraction: float
    max_wait_ms: float
    keys: List[str]  # the key each value came from, in the fields' order

    def deprecation_notes(self) -> List[str]:
        """One line per value read from a deprecated ``ver_system`` key."""
        return [
            f"habitat_ver: {key} is deprecated: set {_RL_VER}.{key.rpartition('.')[2]} instead"
            for key in self.keys
            if key.startswith(_VER_SYSTEM)
        ]


def inference_batching(config: Any) -> InferenceBatching:
    """``min_batch_fraction`` and ``max_wait_ms`` from ``rl.ver``, or from the
    deprecated ``ver_system`` where a value is set there."""
    baselines = config.habitat_baselines
    # Upstream's own schema (an upstream config) has neither key: defaults.
    ver = baselines.rl.get("ver") or {}
    old = baselines.get("ver_system") or {}
    values, keys = [], []
    for name in ("min_batch_fraction", "max_wait_ms"):
        if name in old and old[name] is not None:
            values.append(old[name])
            keys.append(f"{_VER_SYSTEM}.{name}")
        else:
            values.append(ver[name] if name in ver else getattr(HabitatVerVERConfig, name))
            keys.append(f"{_RL_VER}.{name}")
    return InferenceBatching(values[0], values[1], keys)


# Learning's share of an update's wall time from which `auto` overlaps.
AUTO_LEARN_SHARE = 0.25
# Cores the run left unused during collection from which `auto` overlaps:
# room for the learner beside the envs.
AUTO_SPARE_CORES = 0.5


def auto_overlaps(
    learn_s: float, collect_s: float, spare_cores: Optional[float], learn_threads: int = 1
) -> bool:
    """``auto``'s choice for the next update, from the last one: the seconds
    the trainer waited for its rollout, the seconds it learnt and on how many
    threads, and the cores the run left unused while it waited (None where
    unknown: decided on the times alone).

    An overlapped update learns on one thread beside the envs.  Where the last
    (lock-step) update learnt on ``learn_threads`` > 1, one thread may take up
    to that many times as long, so overlap is chosen only where even then the
    update would be shorter: ``max(collect, learn * threads) < collect + learn``.
    """
    total = learn_s + collect_s
    if total <= 0 or learn_s < AUTO_LEARN_SHARE * total:
        return False
    if learn_threads > 1 and max(collect_s, learn_s * learn_threads) >= total:
        return False
    return spare_cores is None or spare_cores >= AUTO_SPARE_CORES


def check_ver_settings(config: Any) -> None:
    """``habitat_baselines.rl.ver``: inference batching (also where set by the
    deprecated ``ver_system`` keys), inference workers, overlap."""
    baselines = config.habitat_baselines
    batching = inference_batching(config)
    check(
        in_range(batching.min_batch_fraction, 0.0, 1.0, low_open=True),
        batching.keys[0],
        batching.min_batch_fraction,
        "a fraction of the envs in (0, 1]",
    )
    check(
        in_range(batching.max_wait_ms, 0.0, math.inf),
        batching.keys[1],
        batching.max_wait_ms,
        "a finite number of milliseconds >= 0",
    )
    ver = baselines.rl.get("ver")
    if ver is not None:
        check(
            is_count(ver.num_inference_workers, 1),
            "habitat_baselines.rl.ver.num_inference_workers",
            ver.num_inference_workers,
            "an integer >= 1",
        )
        overlap = ver.overlap_rollouts_and_learn
        check(
            isinstance(overlap, bool) or overlap == AUTO,
            OVERLAP_KEY,
            overlap,
            f"True, False or {AUTO} (overlap when learning took >= "
            f"{AUTO_LEARN_SHARE:.0%} of the last update)",
        )
