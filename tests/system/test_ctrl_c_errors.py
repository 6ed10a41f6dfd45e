"""Telling a Ctrl-C apart when a library turned it into another error
(habitat_ver.system.stop_signals.raised_by_ctrl_c)."""

import pytest

from habitat_ver.system.stop_signals import raised_by_ctrl_c


def _raise_during_cleanup():
    try:
        raise KeyboardInterrupt
    finally:
        raise KeyError("a half-set node")  # a cleanup step failing on the way out


def _raise_from(cause):
    raise ValueError("wrapped") from cause


def test_an_error_raised_while_a_keyboard_interrupt_unwound_is_a_ctrl_c():
    with pytest.raises(KeyError) as caught:
        _raise_during_cleanup()
    assert raised_by_ctrl_c(caught.value)
    with pytest.raises(ValueError) as wrapped:
        _raise_from(caught.value)
    assert raised_by_ctrl_c(wrapped.value)  # two links down
    assert raised_by_ctrl_c(KeyboardInterrupt())


def test_other_errors_are_not():
    with pytest.raises(ValueError) as caught:
        _raise_from(OSError("disk full"))
    assert not raised_by_ctrl_c(caught.value)
    assert not raised_by_ctrl_c(ValueError("plain"))
