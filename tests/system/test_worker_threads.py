"""Every worker process runs torch on one thread, whatever the environment says.

An env worker copies each observation into a shared tensor; with more than
one torch thread a 128x128 RGB frame wakes torch's OpenMP pool at every step,
whose threads then spin (habitat_ver.system.worker_threads).  Checked from
inside each kind of worker: VER's env workers, APPO's rollout workers, the
lock-step vector env's workers (ddppo and evaluation) and a bare child of the
forkserver, with ``OMP_NUM_THREADS=3`` set as a user might.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

USER_THREADS = 3


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("thread_probe")
    for name in ("thread_probe_run.py", "thread_probe_envs.py"):
        shutil.copy(Path(__file__).with_name(name), folder / name)
    script = folder / "thread_probe_run.py"
    env = dict(os.environ, OMP_NUM_THREADS=str(USER_THREADS))
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=script.parent,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("PROBES ")]
    return json.loads(line[len("PROBES ") :])


@pytest.mark.multiproc
@pytest.mark.parametrize("kind", ["ver", "appo", "lockstep"])
def test_each_worker_kind_steps_on_one_torch_thread(probes, kind):
    first, last, _ = probes[kind]
    assert len(first) == len(last) == 2
    for (threads_first, os_first), (threads_last, os_last) in zip(first, last):
        assert threads_first == threads_last == 1
        # Copying frames into shared rows started no thread pool.
        assert os_last == os_first


@pytest.mark.multiproc
def test_workers_and_the_forkserver_bear_their_kind_in_the_kernel(probes):
    # habitat_ver.system.process_names: what benchmarks/process_cpu.py reads.
    assert {"hv-env-0", "hv-env-1", "hv-forkserver"} <= set(probes["ver"][2])
    assert {"hv-rollout-0", "hv-rollout-1"} <= set(probes["appo"][2])
    assert probes["lockstep"][2].count("hv-env") == 2


@pytest.mark.multiproc
def test_the_forkserver_hands_its_children_one_thread(probes):
    assert probes["forkserver_child"] == 1


@pytest.mark.multiproc
def test_the_trainer_keeps_what_the_user_asked_for(probes):
    # Only processes we start are pinned: the run's own process keeps
    # OMP_NUM_THREADS (its learner threads are the trainer's to set).
    at_start, at_end = probes["trainer"]
    assert at_end == at_start
    if os.cpu_count() > 1:  # otherwise torch starts with one thread anyway
        assert at_start > 1
