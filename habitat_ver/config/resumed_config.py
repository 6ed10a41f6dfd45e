"""Which values a resumed run or an evaluated checkpoint really uses.

With ``habitat_baselines.load_resume_state_config=True`` (upstream's default)
the config stored in the resume state or checkpoint wins over the command's
(upstream's rule), less the code and file locations that
:func:`~habitat_ver.config.stored.with_current_code` takes from the command.
Upstream said so with one banner for any difference, also for values it did
honour, and named none.  Here the command's values are kept where they are
meant to change between sessions:

* training: the budget (:data:`BUDGET_KEYS`), so a finished run goes on to a
  raised ``total_num_steps`` or ``num_updates``;
* evaluation: what the evaluation itself reads (:data:`EVALUATION_KEYS`:
  episode count, split, videos, env count);

and every other value of the command that differs from the one used is named
in one warning (:func:`unused_values_warning`).
"""

import copy
from typing import Any, Dict, List, Sequence, Tuple

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

# The run's length: a resumed run trains to the command's.
BUDGET_KEYS = ("habitat_baselines.total_num_steps", "habitat_baselines.num_updates")
# What an evaluation reads, beside the checkpoint's env and policy settings
# (upstream's evaluator reads most of these from the command's config already).
EVALUATION_KEYS = (
    "habitat_baselines.evaluate",
    "habitat_baselines.eval",
    "habitat_baselines.test_episode_count",
    "habitat_baselines.num_environments",
    "habitat_baselines.video_fps",
    "habitat_baselines.eval_keys_to_include_in_name",
    "habitat_baselines.load_resume_state_config",
)
# Printed for a key one of the two configs lacks.
ABSENT = "(absent)"
_MISSING = object()
# At most this many keys are listed; the rest are counted.
MAX_LISTED = 20

Difference = Tuple[str, Any, Any]


def _leaves(node: Any, path: str, out: Dict[str, Any]) -> None:
    """Dotted path -> value of every leaf; a list is one leaf."""
    if isinstance(node, dict) and (node or not path):
        for key, value in node.items():
            _leaves(value, f"{path}.{key}" if path else str(key), out)
    else:
        out[path] = node


def _plain_leaves(config: Any) -> Dict[str, Any]:
    plain = OmegaConf.to_container(config, resolve=True) if OmegaConf.is_config(config) else config
    leaves: Dict[str, Any] = {}
    _leaves(plain, "", leaves)
    return leaves


def differences(given: Any, used: Any) -> List[Difference]:
    """``(key, given value, used value)`` of every leaf that differs, sorted by key.

    A key only one of the two has is listed with :data:`ABSENT` on the other side.
    """
    given_leaves, used_leaves = _plain_leaves(given), _plain_leaves(used)
    found = []
    for key in sorted(set(given_leaves) | set(used_leaves)):
        old = used_leaves.get(key, _MISSING)
        new = given_leaves.get(key, _MISSING)
        if old != new:
            found.append(
                (key, ABSENT if new is _MISSING else new, ABSENT if old is _MISSING else old)
            )
    return found


def with_command_values(stored: DictConfig, current: DictConfig, keys: Sequence[str]) -> DictConfig:
    """``stored`` with the nodes at ``keys`` taken from ``current`` (where it has them)."""
    result = copy.deepcopy(stored)
    with read_write(result), open_dict(result):
        for key in keys:
            node = OmegaConf.select(current, key, default=_MISSING, throw_on_missing=False)
            if node is _MISSING:
                continue
            value = (
                OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
            )
            OmegaConf.update(result, key, value, merge=False, force_add=True)
    return result


def unused_values_warning(found: Sequence[Difference], what: str, way_out: str) -> str:
    """One warning naming each key, the value given and the value used.

    Args:
        found: :func:`differences` of the command's config and the one used.
        what: e.g. ``"resuming the run in <folder>"``.
        way_out: the sentence telling how to use the command's values instead.
    """
    lines = [
        f"{what} with its stored config (habitat_baselines.load_resume_state_config=True): "
        f"{len(found)} value(s) of this command are not used; {way_out}"
    ]
    lines.extend(
        f"  {key}: given {given!r}, used {used!r}" for key, given, used in found[:MAX_LISTED]
    )
    if len(found) > MAX_LISTED:
        lines.append(f"  ... and {len(found) - MAX_LISTED} more")
    return "\n".join(lines)


def changed_budget(stored: Any, used: Any) -> List[Difference]:
    """``(key, used value, stored value)`` of the budget keys that now differ."""
    found = []
    for key in BUDGET_KEYS:
        old = OmegaConf.select(stored, key, default=None)
        new = OmegaConf.select(used, key, default=None)
        if old != new:
            found.append((key, new, old))
    return found
