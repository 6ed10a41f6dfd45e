"""The cores a run left unused while it collected (system/spare_cores.py)."""

import subprocess
import sys
import textwrap
import time

import pytest

from habitat_ver.system import spare_cores
from habitat_ver.system.spare_cores import SpareCores, workers_cpu_seconds


def test_spare_cores_from_the_runs_own_cpu(monkeypatch):
    # 2 cores; over 2 s of wall time the trainer spends 0.5 CPU-s and its
    # workers 2.5: 1.5 cores used on average, 0.5 spare.
    walls = iter([10.0, 12.0])
    trainer = iter([1.0, 1.5])
    workers = iter([4.0, 6.5])
    monkeypatch.setattr(spare_cores.time, "monotonic", lambda: next(walls))
    monkeypatch.setattr(spare_cores.time, "process_time", lambda: next(trainer))
    monkeypatch.setattr(spare_cores, "workers_cpu_seconds", lambda pids: next(workers))
    meter = SpareCores(lambda: [123], cores=2)
    assert meter.last is None
    meter.start()
    assert meter.stop() == pytest.approx(0.5)
    assert meter.last == pytest.approx(0.5)


def test_spare_cores_never_go_below_zero(monkeypatch):
    walls, spent = iter([0.0, 1.0]), iter([0.0, 3.0])  # 3 cores' worth on 2
    monkeypatch.setattr(spare_cores.time, "monotonic", lambda: next(walls))
    monkeypatch.setattr(spare_cores.time, "process_time", lambda: next(spent))
    monkeypatch.setattr(spare_cores, "workers_cpu_seconds", lambda pids: 0.0)
    meter = SpareCores(list, cores=2)
    meter.start()
    assert meter.stop() == 0.0


# A worker whose child (as ViZDoom's engine is) burns 0.4 CPU-seconds, then
# both wait to be killed.
WORKER = textwrap.dedent(
    """
    import subprocess, sys, time
    if sys.argv[1:] == ["child"]:
        while time.process_time() < 0.4:
            pass
        print("burnt", flush=True)
        time.sleep(60)
    child = subprocess.Popen([sys.executable, __file__, "child"])
    time.sleep(60)
    """
)


def test_a_workers_children_count_as_the_worker(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    worker = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout.readline().strip() == "burnt"  # the grandchild's line
        time.sleep(0.05)
        # The child's 0.4 CPU-s and its start-up, plus the worker's start-up;
        # /proc counts in clock ticks, sampled, so a few ticks may go missing.
        assert 0.3 <= workers_cpu_seconds([worker.pid]) < 2.0
        assert workers_cpu_seconds([]) == 0.0
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(worker.pid)], check=False)
        worker.kill()
        worker.wait()
