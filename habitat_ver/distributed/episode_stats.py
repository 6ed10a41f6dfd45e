"""Episode statistics that every rank can all-reduce."""

from typing import Any, Dict, List

import torch
from torch import Tensor


def agree_on_episode_stat_keys(stats: Dict[str, Tensor]) -> None:
    """Gives every rank the same episode-statistic keys (zeros where new)
    before upstream's all-reduce of them.

    Info metrics become keys when a rank first sees them in an ended episode
    (e.g. gym's ``TimeLimit.truncated`` once an episode reaches the limit), so
    ranks can hold different keys; upstream then all-reduces differently
    shaped tensors and the run dies in the collective.

    Args:
        stats: this rank's ``running_episode_stats`` (``count`` among them);
            completed in place.
    """
    keys = sorted(stats)
    every_rank: List[Any] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(every_rank, keys)
    count = stats["count"]
    for key in sorted(set().union(*every_rank)):
        if key not in stats:
            stats[key] = torch.zeros_like(count)
