"""The lines around each evaluation in a log: the checkpoint and the episodes.

Upstream's evaluator logs its results as ``Average episode <key>: <value>``
lines and nothing else about the evaluation, so a log holding several (a
folder's checkpoints, or a second evaluation appended to the same file) did not
say where one ended, nor how many episodes each average was over.  Our
trainers log :func:`header_line` as each checkpoint's evaluation starts, and
our evaluator :func:`counted_line` after the averages: upstream's evaluator
stops once ``test_episode_count`` episodes are done, but every env whose
episode ends on that same step is averaged in too.  An evaluation therefore
runs on no more envs than the episodes it plans (:func:`envs_for_episodes`),
and the counted line says what the averages are over.
:mod:`habitat_ver.tools.hab_stage_report` reads both back (:data:`HEADER`,
:data:`COUNTED`).
"""

import copy
import re
from typing import Any, Optional, Sequence

from habitat.config import read_write

HEADER = re.compile(
    r"habitat_ver: evaluating (?P<checkpoint>.*) on (?P<episodes>\d+) episode\(s\)$"
)
COUNTED = re.compile(r"habitat_ver: the averages above are over (?P<episodes>\d+) episode\(s\)$")


def planned_episodes(config: Any, episodes_per_env: Sequence[Optional[int]]) -> int:
    """The episodes upstream's evaluator averages over (its own rule).

    Args:
        config: the config the evaluation runs with.
        episodes_per_env: the envs' ``number_of_episodes`` (-1 or None: unknown).

    Returns:
        ``test_episode_count`` (the data's episodes when -1, or when the data
        has fewer), times ``eval.evals_per_ep``.
    """
    baselines = config.habitat_baselines
    wanted = int(baselines.test_episode_count)
    available = sum(-1 if n is None else int(n) for n in episodes_per_env)
    if wanted == -1 or 1 < available < wanted:
        wanted = available
    return wanted * int(baselines.eval.evals_per_ep)


# What the line names when the policy loads no checkpoint of its own (the
# ``hab/*`` evaluations: the hierarchical policy loads each skill's).
NO_CHECKPOINT = "the config's policy (no checkpoint)"


def evaluated_checkpoint(config: Any, evaluating: Optional[str]) -> str:
    """The checkpoint the header names: the one evaluated, or "" where the
    evaluation loads none (``eval.should_load_ckpt=False``: the policy the
    config builds, freshly initialised; ``eval_ckpt_path_dir`` is not read)."""
    baselines = config.habitat_baselines
    if not baselines.eval.should_load_ckpt:
        return ""
    return evaluating or str(baselines.eval_ckpt_path_dir)


def header_line(checkpoint: str, episodes: int) -> str:
    """The line :data:`HEADER` matches."""
    return f"habitat_ver: evaluating {checkpoint or NO_CHECKPOINT} on {episodes} episode(s)"


def counted_line(episodes: int) -> str:
    """The line :data:`COUNTED` matches."""
    return f"habitat_ver: the averages above are over {episodes} episode(s)"


def envs_for_episodes(config: Any) -> Any:
    """``config`` with no more envs than ``test_episode_count`` (a copy when
    it changes): each env runs an episode at once, and upstream's evaluator
    averages every one that ends, so 4 envs for 1 episode averaged up to 4."""
    wanted = int(config.habitat_baselines.test_episode_count)
    if not 0 < wanted < int(config.habitat_baselines.num_environments):
        return config
    config = copy.deepcopy(config)
    with read_write(config):
        config.habitat_baselines.num_environments = wanted
    return config
