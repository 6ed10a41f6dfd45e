"""The worker-side watch: a hung call is reported once, per call."""

import os

from habitat_ver.system.trainer_watch import TrainerWatch, trainer_alive


def test_an_overdue_call_is_reported_once_and_a_new_call_rearms():
    reports = []
    # A limit of 0 s: any call in progress is overdue, so no clock is needed.
    watch = TrainerWatch(os.getpid(), 0.0, on_hang=lambda i, s: reports.append(i))
    watch.check_hang()
    assert reports == []  # nothing in progress
    with watch.busy(3):
        watch.check_hang()
        watch.check_hang()
    assert reports == [3]  # once for this call
    watch.check_hang()
    with watch.busy(5):
        watch.check_hang()
    assert reports == [3, 5]


def test_a_call_within_the_limit_is_not_reported():
    reports = []
    watch = TrainerWatch(os.getpid(), 3600.0, on_hang=lambda i, s: reports.append(i))
    with watch.busy(1):
        watch.check_hang()
    assert reports == []


def test_trainer_alive_tells_a_live_process_from_a_gone_one():
    assert trainer_alive(os.getpid())
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)  # reaped: the pid no longer exists
    assert not trainer_alive(pid)
