"""The layout of VER's linear buffer and the options that shape it.

:class:`~habitat_ver.storage.ver_storage.VERStorage` keeps ``(T + 1) * N`` slots
of every per-step tensor (``[capacity, ...]``); this module allocates them with
habitat's ``RolloutStorage`` dtypes and checks the storage's options.
"""

from typing import Any, Dict, cast

import numpy as np
import torch
from habitat_baselines.common.tensor_dict import TensorDict
from torch import Tensor
from habitat_baselines.utils.common import get_action_space_info

# "ver": shuffled sequences, minibatches in random order (VER paper).
# "lockstep": sequences grouped by env in torch.randperm(N) order, minibatches
# in order: with T steps per env and B | N, the same minibatches (same envs,
# same rows) as habitat's lock-step data_generator under the same RNG state.
MINIBATCH_MODES = ("ver", "lockstep")

# Float buffers reset to NaN when slots are freed, so stale reads show up.
SENTINEL_KEYS = ("rewards", "returns", "value_preds", "action_log_probs")


def allocate_buffers(
    capacity: int,
    observation_space: Any,
    action_space: Any,
    actor_critic: Any,
    with_is_coeffs: bool,
) -> TensorDict:
    """Linear ``[capacity, ...]`` buffers; dtypes as habitat's RolloutStorage."""
    action_shape, discrete = get_action_space_info(action_space)
    if action_shape is None:
        action_shape = action_space.shape
    action_dtype = torch.long if discrete else torch.float32
    buffers = TensorDict()
    buffers["observations"] = TensorDict()
    for sensor, space in observation_space.spaces.items():
        buffers["observations"][sensor] = torch.from_numpy(
            np.zeros((capacity, *space.shape), dtype=space.dtype)
        )
    buffers["recurrent_hidden_states"] = torch.zeros(
        capacity, actor_critic.num_recurrent_layers, actor_critic.recurrent_hidden_size
    )
    actions = torch.zeros(capacity, *action_shape, dtype=action_dtype)
    buffers["actions"] = actions
    buffers["prev_actions"] = torch.zeros_like(actions)
    buffers["masks"] = torch.zeros(capacity, 1, dtype=torch.bool)
    for key in SENTINEL_KEYS + (("is_coeffs",) if with_is_coeffs else ()):
        buffers[key] = torch.full((capacity, 1), float("nan"))
    buffers["policy_version"] = torch.zeros(capacity, 1, dtype=torch.int64)
    # True for steps reused from the previous rollout (stale fill).
    buffers["is_stale"] = torch.zeros(capacity, 1, dtype=torch.bool)
    return buffers


def write_rows(tree: TensorDict, start: int, values: Dict[str, Any]) -> None:
    """``tree[start : start + n] = values`` for the keys both have, nested dicts
    included (habitat's ``TensorDict.set(..., strict=False)`` on a slice).

    The slots one insert writes are consecutive, so a slice does what an index
    tensor would at a fraction of the cost: the storage writes every step.
    """
    for key, value in values.items():
        if key not in tree:
            continue
        target = tree[key]
        if isinstance(value, dict):
            write_rows(cast(TensorDict, target), start, value)
        else:
            rows = cast(Tensor, target)
            rows[start : start + value.shape[0]] = value


def validate_options(is_double_buffered: bool, minibatch_mode: str, cap: float) -> None:
    if is_double_buffered:
        raise ValueError(
            "VERStorage: is_double_buffered=True is not supported (VER steps "
            "envs asynchronously); set rl.ppo.use_double_buffered_sampler=False"
        )
    if minibatch_mode not in MINIBATCH_MODES:
        raise ValueError(
            f"VERStorage: minibatch_mode={minibatch_mode!r}; allowed: {MINIBATCH_MODES}"
        )
    if cap <= 0:
        raise ValueError(f"VERStorage: is_coeff_cap={cap} must be > 0")
