"""The pipe between an env worker and the trainer (:class:`WorkerLink`)."""

import functools
import multiprocessing
import os
import threading

import gym
import pytest
import torch

from habitat_ver.system import env_worker
from habitat_ver.system.env_worker import (
    COMMAND_MESSAGES,
    READY_MESSAGE,
    Command,
    Report,
    TrainerGoneError,
    WorkerLink,
    decode_report,
)
from habitat_ver.system.per_env_pool import EnvWorkerError, PerEnvPool


def test_reports_arrive_in_order_and_decode():
    ours, theirs = multiprocessing.Pipe(duplex=True)
    link = WorkerLink(theirs, os.getpid())
    link.report(Report.INFO_NAMES, 3, ["success"])
    link.report(Report.READY, 3)
    link.report(Report.HUNG, 3, 61.5)
    # READY is the one byte on the hot path; the rest are pickled tuples.
    messages = [ours.recv_bytes() for _ in range(3)]
    assert messages[1] == READY_MESSAGE == b"\x01"
    assert [decode_report(3, m) for m in messages] == [
        (Report.INFO_NAMES, 3, ["success"]),
        (Report.READY, 3, None),
        (Report.HUNG, 3, 61.5),
    ]


def test_receive_gives_commands_and_objects():
    ours, theirs = multiprocessing.Pipe(duplex=True)
    link = WorkerLink(theirs, os.getpid())
    ours.send(torch.arange(3))
    for command in Command:
        ours.send_bytes(COMMAND_MESSAGES[command])
    assert link.receive().tolist() == [0, 1, 2]
    received = [link.receive() for _ in Command]
    assert received == list(Command) and all(isinstance(c, Command) for c in received)


def test_receive_ends_once_the_trainer_is_gone(monkeypatch):
    monkeypatch.setattr(env_worker, "PARENT_CHECK_SECONDS", 0.01)
    gone = multiprocessing.get_context("fork").Process(target=os._exit, args=(0,))
    gone.start()
    gone.join()  # reaped: its pid names no process now
    _, theirs = multiprocessing.Pipe(duplex=True)
    with pytest.raises(TrainerGoneError, match=str(gone.pid)):
        WorkerLink(theirs, gone.pid).receive()


@pytest.mark.multiproc
def test_worker_that_dies_at_start_is_named():
    # Its pipe reaches end-of-file: no wait for the 300 s start timeout.
    with pytest.raises(EnvWorkerError, match=r"(?s)environment 1 .*exited with code 3"):
        PerEnvPool([functools.partial(gym.make, "CartPole-v1"), functools.partial(os._exit, 3)])


@pytest.mark.multiproc
def test_worker_killed_between_steps_ends_a_wait_without_timeout():
    pool = PerEnvPool([functools.partial(gym.make, "CartPole-v1")] * 2)
    try:
        pool.reset()
        pool.send_actions(torch.tensor([0]), torch.tensor([[1]]))
        assert pool.wait_ready(2) == [0]
        pool._processes[1].kill()
        pool.send_actions(torch.tensor([0]), torch.tensor([[1]]))
        raised = []

        def wait_for_ever():
            try:
                while True:
                    pool.wait_ready(2, timeout=None)
                    pool.send_actions(torch.tensor([0]), torch.tensor([[1]]))
            except EnvWorkerError as error:
                raised.append(str(error))

        waiter = threading.Thread(target=wait_for_ever, daemon=True)
        waiter.start()
        waiter.join(60)  # a liveness bound, not a timing: before, it waited for ever
        assert len(raised) == 1 and "environment 1 " in raised[0]
        assert "exited with code -9" in raised[0]
    finally:
        pool.close()
