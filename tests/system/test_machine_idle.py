"""The machine's idle cores over a stretch of time (system/machine_idle.py)."""

import time

import pytest

from habitat_ver.system import machine_idle
from habitat_ver.system.machine_idle import IdleCores


def test_idle_cores_from_two_readings_of_proc_stat(monkeypatch):
    # 4 cores; between the readings 400 jiffies pass in all, 100 of them
    # idle or iowait (70 + 30): a quarter idle, so 1.0 idle core.
    readings = iter([(1000.0, 5000.0), (1100.0, 5400.0)])
    monkeypatch.setattr(machine_idle, "_cpu_jiffies", lambda: next(readings))
    meter = IdleCores(cores=4)
    assert meter.last is None
    meter.start()
    assert meter.stop() == pytest.approx(1.0)
    assert meter.last == pytest.approx(1.0)


def test_no_reading_gives_none(monkeypatch):
    monkeypatch.setattr(machine_idle, "_cpu_jiffies", lambda: None)
    meter = IdleCores(cores=2)
    meter.start()
    assert meter.stop() is None


def test_a_live_reading_lies_between_none_and_every_core():
    meter = IdleCores()
    meter.start()
    time.sleep(0.2)
    assert 0.0 <= meter.stop() <= meter.cores
