"""Two gloo ranks on CPU, one of them a straggler: DD-PPO and VER preemption."""

import json
import os
import socket
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from habitat_ver.common.checkpoint import ResumeStateFiles

from .conftest import run_overrides

WORKER = Path(__file__).with_name("ddppo_rank_worker.py")
NUM_STEPS = 16


def _free_ports(count: int):
    """Distinct free ports (all sockets held open while choosing)."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _two_ranks_command(tmp_path, config_name, overrides):
    """(command, environment) training on 2 gloo ranks under torchrun."""
    store_port, launcher_port = _free_ports(2)
    env = dict(
        os.environ,
        MAIN_PORT=str(store_port),
        MAIN_ADDR="127.0.0.1",
        GLOO_SOCKET_IFNAME="lo",
        OMP_NUM_THREADS="1",
    )
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        f"--master_port={launcher_port}",
        str(WORKER),
        str(tmp_path),
        config_name,
        *overrides,
    ]
    return cmd, env


def _run_two_ranks(tmp_path, config_name, overrides):
    """Train on 2 gloo ranks; returns each rank's report."""
    cmd, env = _two_ranks_command(tmp_path, config_name, overrides)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, "\n".join(
        ln for ln in done.stderr.splitlines() if "rank1]" in ln or "Error" in ln
    )[-6000:]
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]


def _slow_rank1(factor: int):
    """Global env indices 2 and 3 are rank 1's two envs: make them slow."""
    s = "habitat_baselines.embedded_env.straggler"
    return [
        f"{s}.enabled=True",
        f"{s}.base_step_seconds=0.002",
        f"{s}.speed_factor_min=1.0",
        f"{s}.speed_factor_max=1.0",
        f"{s}.jitter=0.0",
        f"{s}.long_step_prob=0.0",
        f"{s}.slow_env_indices=[2,3]",
        f"{s}.slow_factor={factor}",
    ]


@pytest.mark.multiproc
def test_ver_on_two_ranks_keeps_parameters_identical(tmp_path):
    updates = 3
    rank0, rank1 = _run_two_ranks(
        tmp_path,
        "gym/ver_cartpole",
        run_overrides(tmp_path / "run", num_updates=updates)
        + ["habitat_baselines.distrib_preemption.policy=none"],
    )
    assert rank0["params"] == rank1["params"]
    # Each rank's rollout holds T*N steps; the step counter sums both ranks.
    assert rank0["rollout_lengths"] == rank1["rollout_lengths"] == [NUM_STEPS * 2] * updates
    assert rank0["num_steps_done"] == rank1["num_steps_done"] == updates * 2 * NUM_STEPS * 2


@pytest.mark.multiproc
def test_straggler_rank_is_preempted_and_parameters_stay_identical(tmp_path):
    updates = 4
    overrides = (
        run_overrides(tmp_path / "run", num_updates=updates)
        + ["habitat_baselines.rl.ddppo.sync_frac=0.5"]
        + _slow_rank1(40)
    )
    fast, slow = _run_two_ranks(tmp_path, "gym/ddppo_cartpole", overrides)

    assert fast["params"] == slow["params"]  # gradients were averaged every update
    assert fast["num_updates_done"] == slow["num_updates_done"] == updates
    assert fast["rollout_lengths"] == [NUM_STEPS] * updates
    # The straggler stopped early, but never before a quarter of T.
    assert all(NUM_STEPS // 4 <= n < NUM_STEPS for n in slow["rollout_lengths"])
    # Steps are counted across ranks once: both ranks agree on the total.
    assert fast["num_steps_done"] == slow["num_steps_done"]
    expected = 2 * (sum(fast["rollout_lengths"]) + sum(slow["rollout_lengths"]))
    assert fast["num_steps_done"] == expected


@pytest.mark.multiproc
def test_ver_preemption_cuts_the_straggler_and_fills_its_batch(tmp_path):
    updates, batch = 5, NUM_STEPS * 2
    overrides = run_overrides(tmp_path / "run", num_updates=updates) + _slow_rank1(40)
    fast, slow = _run_two_ranks(tmp_path, "gym/ver_cartpole", overrides)
    assert fast["params"] == slow["params"]
    fast_stats, slow_stats = fast["rollout_stats"], slow["rollout_stats"]
    # Every rank learns on a full batch: fresh steps plus stale fill.
    assert all(r["fresh"] + r["stale"] == batch for r in fast_stats + slow_stats)
    # The first rollout has no estimate (nor a previous rollout): not cut.
    assert slow_stats[0]["target"] is None and slow_stats[0]["stale"] == 0
    for u in range(1, updates):
        target = slow_stats[u]["target"]
        assert target == fast_stats[u]["target"]  # one decision, shared
        assert batch <= target < 2 * batch  # collect less than everything
        assert slow_stats[u]["fresh"] < batch and slow_stats[u]["stale"] > 0
        # Once the counter reached S both ranks stopped; steps already under
        # way then still count, up to N per rank (2 envs x 2 ranks) past S.
        assert fast_stats[u]["fresh"] + slow_stats[u]["fresh"] <= target + 2 * 2
        # The fast rank waits for the slow one about a learning time at most
        # (plus the slow env's step in flight, 80 ms, and scheduling slack).
        wait = slow_stats[u]["end_time"] - fast_stats[u]["end_time"]
        assert wait <= fast_stats[u]["learn_s_before"] + 0.08 + 0.5
    # Steps are counted once: the fresh steps of both ranks, stale ones not.
    fresh = sum(r["fresh"] for r in fast_stats + slow_stats)
    assert fast["num_steps_done"] == slow["num_steps_done"] == fresh
    # TensorBoard gets the stale share of each update's batch, over both ranks.
    logged = _scalars(tmp_path / "run" / "tb", "system/stale_fraction")
    expected = [(f["stale"] + s["stale"]) / (2 * batch) for f, s in zip(fast_stats, slow_stats)]
    assert logged == pytest.approx(expected)


def _scalars(tb_dir, tag) -> list:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tb_dir))
    events.Reload()
    return [event.value for event in events.Scalars(tag)]


def _signal_rank_once_trained_past(tmp_path, run, overrides, rank, past_update):
    """Start 2 ranks, SIGTERM ``rank`` once the resume state is past
    ``past_update``; returns both ranks' reports (asserting exit status 0)."""
    cmd, env = _two_ranks_command(tmp_path, "gym/ver_cartpole", overrides)
    for r in (0, 1):
        (tmp_path / f"rank{r}.json").unlink(missing_ok=True)
        (tmp_path / f"rank{r}.pid").unlink(missing_ok=True)
    files = ResumeStateFiles(str(run / "checkpoints"))
    with open(tmp_path / "stderr.txt", "w") as stderr:  # a full pipe would block the run
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()[-3000:]
            assert time.monotonic() < deadline
            state = files.load() if (run / "checkpoints" / "resume-state.pth").exists() else None
            if state and state["requeue_stats"]["num_updates_done"] > past_update:
                break
            time.sleep(0.2)
        os.kill(int((tmp_path / f"rank{rank}.pid").read_text()), signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, (tmp_path / "stderr.txt").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]


@pytest.mark.multiproc
def test_sigterm_on_one_rank_stops_both_after_one_update_and_the_run_resumes(tmp_path):
    run = tmp_path / "run"
    overrides = run_overrides(run, num_updates=100000) + [
        "habitat_baselines.distrib_preemption.policy=none"
    ]
    files = ResumeStateFiles(str(run / "checkpoints"))
    # Only rank 1 gets the signal (SLURM's may reach ranks at different times).
    rank0, rank1 = _signal_rank_once_trained_past(tmp_path, run, overrides, 1, 0)
    # Both ranks stopped after the same update, long before the budget.
    assert rank0["num_updates_done"] == rank1["num_updates_done"] < 100000
    assert rank0["params"] == rank1["params"]
    saved = files.load()["requeue_stats"]
    assert saved["num_updates_done"] == rank0["num_updates_done"]
    assert saved["num_steps_done"] == rank0["num_steps_done"]
    # The same command again resumes there (the saved config is used, as
    # upstream does); this time rank 0 gets the signal.
    first = saved["num_updates_done"]
    rank0, rank1 = _signal_rank_once_trained_past(tmp_path, run, overrides, 0, first)
    assert rank0["num_updates_done"] == rank1["num_updates_done"] > first
    assert rank0["params"] == rank1["params"]
    more = rank0["num_updates_done"] - first
    assert rank0["num_steps_done"] == saved["num_steps_done"] + more * NUM_STEPS * 2 * 2
    assert files.load()["requeue_stats"]["num_updates_done"] == rank0["num_updates_done"]
