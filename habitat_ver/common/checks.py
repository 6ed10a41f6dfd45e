"""Argument checks whose errors name the argument, its value and what is allowed."""

import math
import numbers
from typing import Any

# The value of a setting that leaves the choice to the code that reads it
# (an estimator, a preemption rule, a layout, the learner's threads, overlap).
AUTO = "auto"


def is_int(value: Any) -> bool:
    """True for an integer (``bool`` excluded)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(name: str, value: Any, minimum: int) -> None:
    """Raises ValueError unless ``value`` is an integer >= ``minimum``."""
    if not is_int(value) or value < minimum:
        raise ValueError(f"{name}={value!r} is not allowed: must be an integer >= {minimum}")


def is_number(value: Any) -> bool:
    """True for an int or a float (``bool`` excluded)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def in_range(value: Any, low: float, high: float, low_open: bool = False) -> bool:
    """A finite number in [low, high] ((low, high] with ``low_open``)."""
    if not is_number(value) or not math.isfinite(value):
        return False
    return (value > low if low_open else value >= low) and value <= high


def is_count(value: Any, minimum: int) -> bool:
    """An ``int`` (``bool`` excluded) >= ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum
