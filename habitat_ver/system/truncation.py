"""Which episode ends were time-limit cuts, read from the env's info.

gym's ``TimeLimit`` wrapper (which ``gym.make`` adds for a registered
``max_episode_steps``, and so habitat's ``GymRegistryEnv``) ends an episode at
its step limit with ``info["TimeLimit.truncated"] = True``. Such an end is not
a terminal state: the learners bootstrap from a value there
(:func:`habitat_ver.algo.gae.bootstrap_truncated_rewards`). habitat's own
tasks report no such flag; their episode ends count as terminal.
"""

from typing import Any, Mapping, Sequence

import torch
from torch import Tensor

__all__ = ["TRUNCATION_KEY", "truncated_from_info", "truncated_from_info_rows"]

TRUNCATION_KEY = "TimeLimit.truncated"


def truncated_from_info(info: Mapping[str, Any], done: bool) -> bool:
    """True when a step that ended its episode (``done``) was a time-limit cut."""
    return bool(done) and bool(info.get(TRUNCATION_KEY, False))


def truncated_from_info_rows(
    env_ids: Tensor, infos: Tensor, info_names: Sequence[Sequence[str]], dones: Tensor
) -> Tensor:
    """The same, from shared-memory info rows (:class:`InfoColumns` layout).

    Args:
        env_ids: env of each row.
        infos: scalar info values; column ``c`` of env ``e``'s row holds
            ``info_names[e][c]`` (NaN where absent).
        info_names: per env, the names of its info columns.
        dones: True where the step ended its episode.

    Shapes:
        env_ids, dones: ``[n]``; infos: ``[n, C]``; returns ``[n]`` bool.
    """
    out = torch.zeros(env_ids.numel(), dtype=torch.bool)
    for row, env in enumerate(env_ids.tolist()):
        names = info_names[env]
        if TRUNCATION_KEY in names:
            value = float(infos[row, list(names).index(TRUNCATION_KEY)])
            out[row] = value == value and value > 0.5  # NaN: absent this step
    return out & dones.view(-1).cpu().bool()
