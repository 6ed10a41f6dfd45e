"""Masking the navigation skill's stop while its target is far away.

VER paper, appendix B: the navigation skill has a dedicated stop action and
is trained with a force penalty, which makes it stop at once when it starts in
contact with something.  At evaluation its stop is therefore masked while the
target is more than 2 m away; the distance comes from the skill's own goal
sensor (polar ``[rho, -phi]`` of habitat-lab's GPS+compass sensors), so no
privileged information is used.
"""

from typing import Tuple

import torch
from torch import Tensor

# Paper's distance (metres) beyond which the navigation skill may not stop.
DEFAULT_MAX_STOP_DISTANCE = 2.0

# habitat-lab's RearrangeStopAction stops when its value is > 0; this is "no stop".
NO_STOP = -1.0


def mask_stop(
    stop: Tensor, target_distance: Tensor, max_stop_distance: float
) -> Tuple[Tensor, Tensor]:
    """Replace stop by :data:`NO_STOP` where the target is too far.

    Args:
        stop: the skill's stop action values (> 0 means stop).
        target_distance: distance to the target in metres, same shape.
        max_stop_distance: stop is allowed up to and including this distance.

    Returns:
        ``(masked_stop, was_masked)``: a new tensor (``stop`` is not written)
        and a bool tensor marking the entries that were masked.

    Shapes:
        stop, target_distance: ``[B]``; both outputs ``[B]``.
    """
    if max_stop_distance <= 0:
        raise ValueError(f"max_stop_distance={max_stop_distance} must be > 0 (metres)")
    too_far = target_distance > max_stop_distance
    was_masked = too_far & (stop > 0)
    masked = torch.where(too_far, torch.full_like(stop, NO_STOP), stop)
    return masked, was_masked


def polar_distance(polar_goal: Tensor) -> Tensor:
    """``rho`` of habitat-lab's ``[rho, -phi]`` goal sensors.  ``[B, 2] -> [B]``."""
    return polar_goal[..., 0]
