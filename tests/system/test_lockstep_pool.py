"""LockstepPool's hang warning: an env's first answer waits for its
construction, which gets a longer allowance than a step or reset."""

import time

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_ver.system import lockstep_pool
from habitat_ver.system.lockstep_pool import BUILD_WARNING_FACTOR, LockstepPool

LIMIT_S = 0.05


class _Connection:
    """A worker's pipe whose answer arrives ``delay`` seconds from now."""

    def __init__(self, delay):
        self.ready_at = time.monotonic() + delay

    def poll(self, timeout):
        time.sleep(timeout)
        return time.monotonic() >= self.ready_at

    def recv(self):
        return "answer"


def _guarded(monkeypatch):
    warned = []
    monkeypatch.setattr(lockstep_pool, "warn_hung", lambda *args: warned.append(args))
    envs = LockstepPool.__new__(LockstepPool)  # the receiving side only
    envs._describe, envs._hang_warning_s, envs._poll_s = (lambda i: "X"), LIMIT_S, 0.01
    envs._overdue, envs._answered = set(), set()
    envs._is_closed = True  # nothing for VectorEnv.__del__ to close
    return envs, warned


def test_a_slow_construction_is_not_a_hung_step(monkeypatch):
    # A habitat scene loads for tens of seconds: the 60 s step warning fired
    # on healthy starts, calling the construction "one step or reset".
    envs, warned = _guarded(monkeypatch)
    slow_build = 3 * LIMIT_S  # over the step limit, under the build limit
    assert envs._receive(0, _Connection(slow_build)) == "answer"
    assert warned == []
    assert envs._receive(0, _Connection(slow_build)) == "answer"  # now a step
    assert [w[0] for w in warned] == [0] and warned[0][-1] == "inside one step or reset"


def test_a_construction_past_its_allowance_is_named_as_one(monkeypatch):
    envs, warned = _guarded(monkeypatch)
    assert envs._receive(1, _Connection((BUILD_WARNING_FACTOR + 1) * LIMIT_S)) == "answer"
    assert [w[0] for w in warned] == [1] and warned[0][-1] == "being built"
