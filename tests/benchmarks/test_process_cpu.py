"""benchmarks/process_cpu.py: CPU per env step by kind of process, on
hand-made snapshots (the arithmetic) and on a live process tree whose
threads and children name themselves as our workers do."""

import subprocess
import sys
import textwrap
import time

import pytest

from habitat_ver.system import process_names

from .test_benchmark_math import _load

process_cpu = _load("process_cpu")
Snapshot = process_cpu.Snapshot


def test_kinds_come_from_our_names():
    assert process_cpu.kind_of_name("hv-env-12") == "env_workers"
    assert process_cpu.kind_of_name("hv-env") == "env_workers"  # lock-step workers
    assert process_cpu.kind_of_name("hv-rollout-0") == "rollout_workers"
    assert process_cpu.kind_of_name("hv-policy") == "policy_thread"
    assert process_cpu.kind_of_name("hv-forkserver") == "forkserver"
    assert process_cpu.kind_of_name("hv-envelope") is None
    assert process_cpu.kind_of_name("python") is None


def test_unnamed_processes_take_the_kind_of_where_they_stand():
    kind = process_cpu._kind_of_process
    # A forkserver child keeps the server's command line: it is a worker of
    # the kind the caller names (upstream ver's inference workers), not a server.
    assert kind(1, "python", "forkserver", "other_workers") == "other_workers"
    assert kind(1, "python", "forkserver", "env_workers") == "env_workers"
    # A worker's own child (ViZDoom's engine) is part of that worker.
    assert kind(1, "vizdoom", "env_workers", "other_workers") == "env_workers"
    assert kind(1, "vizdoom", "rollout_workers", "other_workers") == "rollout_workers"
    # Named ones are what they say wherever they stand.
    assert kind(1, "hv-env-3", "forkserver", "other_workers") == "env_workers"
    # Below the trainer and not a forkserver: other (the resource tracker).
    assert kind(999999999, "python", "trainer", "other_workers") == "other"


def test_window_costs_on_hand_made_snapshots():
    # The trainer spends 1 CPU-s per wall second, each of two env workers
    # 0.25; a third worker starts at t=12 (absent before: it had spent
    # nothing) and spends 0.5 per second.  Machine: 2 cores, 1.5 busy.
    def snap(t):
        cpu = {("trainer", 1): 1.0 * t, ("env_workers", 2): 0.25 * t, ("env_workers", 3): 0.25 * t}
        if t >= 12:
            cpu[("env_workers", 4)] = 0.5 * (t - 12)
        return Snapshot(wall=t, cpu=cpu, machine_busy=150.0 * t, machine_total=200.0 * t)

    snapshots = [snap(t) for t in (0, 4, 8, 12, 16, 20)]
    # Window 6..18 s (between snapshots: interpolated), 600 env steps.
    costs = process_cpu.window_costs(snapshots, 6.0, 18.0, 600)
    # trainer: 12 CPU-s / 600 steps = 20 ms; env workers: 2 x 3 + 0.5 x 6
    # (from t=12 to 18; interpolated between 16 and 20) = 9 CPU-s = 15 ms.
    assert costs["ms_per_step"]["trainer"] == pytest.approx(20.0)
    assert costs["ms_per_step"]["env_workers"] == pytest.approx(15.0)
    assert costs["processes"] == {"trainer": 1, "env_workers": 3}
    assert costs["total_ms_per_step"] == pytest.approx(35.0)
    assert costs["cores_used"] == pytest.approx(21.0 / 12.0)
    assert costs["machine_idle_share"] == pytest.approx(0.25)
    assert costs["window_s"] == pytest.approx(12.0)


def test_a_process_gone_before_the_window_ends_keeps_its_last_reading():
    snapshots = [
        Snapshot(wall=0.0, cpu={("trainer", 1): 0.0, ("env_workers", 2): 0.0}),
        Snapshot(wall=10.0, cpu={("trainer", 1): 5.0, ("env_workers", 2): 2.0}),
        Snapshot(wall=20.0, cpu={("trainer", 1): 10.0}),  # worker 2 exited
    ]
    costs = process_cpu.window_costs(snapshots, 0.0, 20.0, 1000)
    assert costs["ms_per_step"] == {"trainer": 10.0, "env_workers": 2.0}
    # ... and the run says it lost a worker (upstream ver's env worker that
    # segfaulted on a scene switch while its trainer went on: docs/BENCHMARKS.md).
    assert costs["workers_exited"] == {"env_workers": 1}
    # A window that ends before the worker exits, or one it was never in, lost none.
    assert process_cpu.window_costs(snapshots, 0.0, 10.0, 500)["workers_exited"] == {}
    assert process_cpu.workers_exited(snapshots[1:], 15.0, 20.0) == {}
    # Only workers count: the trainer gone at the end is not a lost worker.
    trainer_gone = [*snapshots[:2], Snapshot(wall=20.0, cpu={("env_workers", 2): 2.5})]
    assert process_cpu.workers_exited(trainer_gone, 0.0, 20.0) == {}


def test_a_window_outside_the_snapshots_is_refused():
    snapshots = [Snapshot(wall=0.0, cpu={("trainer", 1): 0.0})]
    with pytest.raises(ValueError, match="no snapshots around wall time 5.00"):
        process_cpu.window_costs(snapshots, 0.0, 5.0, 10)
    with pytest.raises(ValueError, match="empty window"):
        process_cpu.window_costs(snapshots, 1.0, 1.0, 10)


# A run's stand-in: the main thread idles, a thread named as APPO's policy
# worker burns 1 CPU-second and stays until the end, one named as the overlap
# thread burns 1 CPU-s and exits at once, a child named as an env worker
# burns 1 CPU-s, and that child's unnamed child 0.5 CPU-s.  (They name
# themselves as name_this_thread does, without importing the package.)
BURNER = textwrap.dedent(
    """
    import ctypes, subprocess, sys, threading, time

    def name_this_thread(name):
        ctypes.CDLL(None).prctl(15, ctypes.c_char_p(name.encode()), 0, 0, 0)

    def burn(cpu_seconds):
        while time.thread_time() < cpu_seconds:
            pass

    if sys.argv[1:] == ["grandchild"]:  # unnamed, like ViZDoom's engine
        burn(0.5)
        sys.exit()
    if sys.argv[1:] == ["child"]:
        name_this_thread("hv-env-0")
        grandchild = subprocess.Popen([sys.executable, __file__, "grandchild"])
        burn(1.0)
        grandchild.wait()
        sys.exit()

    done = threading.Event()

    def policy():
        name_this_thread("hv-policy")
        burn(1.0)
        done.wait()  # alive until the end: the sampler sees all it spent

    def overlap():
        name_this_thread("hv-overlap")
        burn(1.0)

    threads = [threading.Thread(target=policy), threading.Thread(target=overlap)]
    for thread in threads:
        thread.start()
    child = subprocess.Popen([sys.executable, __file__, "child"])
    child.wait()
    threads[1].join()
    time.sleep(0.5)  # readings with the overlap thread gone, the process not
    done.set()
    threads[0].join()
    """
)


def test_the_sampler_charges_named_threads_and_processes(tmp_path):
    script = tmp_path / "burner.py"
    script.write_text(BURNER)
    process = subprocess.Popen([sys.executable, str(script)])
    with process_cpu.ProcessSampler(process.pid, period_s=0.1, memory_period_s=0.5) as sampler:
        process.wait()
        time.sleep(0.3)  # one snapshot after the end
    start, end = sampler.snapshots[0].wall, sampler.snapshots[-1].wall
    costs = process_cpu.window_costs(sampler.snapshots, start, end, 1000)
    spent = costs["ms_per_step"]  # ms per step over 1000 steps: CPU-s in total
    # Each burner spends 1 CPU-s (to the kernel's tick, 10 ms); the main
    # thread, which only starts them, far less.
    assert spent["policy_thread"] == pytest.approx(1.0, abs=0.05)
    # A named thread that exited keeps its last reading (its CPU stays in
    # the process's total): what it spent after that reading, at most one
    # period's, is all the trainer is charged with.
    assert 0.5 < spent["overlap_thread"] <= 1.05
    # The env worker and its own child; + their interpreters' start-up.
    assert spent["env_workers"] == pytest.approx(1.5, abs=0.15)
    assert costs["processes"]["env_workers"] == 2
    assert spent["trainer"] < 0.5
    # Memory came by kind, and threads are not counted again beside their process.
    kinds = {kind for _, memory in sampler.memory for kind in memory}
    assert "trainer" in kinds and "policy_thread" not in kinds


def test_name_this_thread_sets_the_kernel_name_of_the_calling_thread():
    import threading

    seen = []

    def target():
        process_names.name_this_thread("hv-overlap-and-more-than-15")
        with open(f"/proc/self/task/{threading.get_native_id()}/comm") as f:
            seen.append(f.read().strip())

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    assert seen == ["hv-overlap-and-"]  # cut to the kernel's 15 bytes
