"""Argument checks whose errors name the argument, its value and what is allowed."""

import numbers
from typing import Any


def is_int(value: Any) -> bool:
    """True for an integer (``bool`` excluded)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(name: str, value: Any, minimum: int) -> None:
    """Raises ValueError unless ``value`` is an integer >= ``minimum``."""
    if not is_int(value) or value < minimum:
        raise ValueError(f"{name}={value!r} is not allowed: must be an integer >= {minimum}")
