"""Two gloo ranks on CPU, one of them a straggler: DD-PPO and VER preemption."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

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


def _run_two_ranks(tmp_path, config_name, overrides):
    """Train on 2 gloo ranks; returns each rank's report."""
    store_port, launcher_port = _free_ports(2)
    env = dict(os.environ, MAIN_PORT=str(store_port), MAIN_ADDR="127.0.0.1",
               GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           f"--master_port={launcher_port}", str(WORKER), str(tmp_path), config_name,
           *overrides]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, "\n".join(
        l for l in done.stderr.splitlines() if "rank1]" in l or "Error" in l
    )[-6000:]
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]


def _slow_rank1(factor: int):
    """Global env indices 2 and 3 are rank 1's two envs: make them slow."""
    s = "habitat_baselines.embedded_env.straggler"
    return [f"{s}.enabled=True", f"{s}.base_step_seconds=0.002",
            f"{s}.speed_factor_min=1.0", f"{s}.speed_factor_max=1.0",
            f"{s}.jitter=0.0", f"{s}.long_step_prob=0.0",
            f"{s}.slow_env_indices=[2,3]", f"{s}.slow_factor={factor}"]


@pytest.mark.multiproc
def test_ver_on_two_ranks_keeps_parameters_identical(tmp_path):
    updates = 3
    rank0, rank1 = _run_two_ranks(
        tmp_path, "gym/ver_cartpole", run_overrides(tmp_path / "run", num_updates=updates)
        + ["habitat_baselines.distrib_preemption.policy=none"]
    )
    assert rank0["params"] == rank1["params"]
    # Each rank's rollout holds T*N steps; the step counter sums both ranks.
    assert rank0["rollout_lengths"] == rank1["rollout_lengths"] == [NUM_STEPS * 2] * updates
    assert rank0["num_steps_done"] == rank1["num_steps_done"] == updates * 2 * NUM_STEPS * 2


@pytest.mark.multiproc
def test_straggler_rank_is_preempted_and_parameters_stay_identical(tmp_path):
    updates = 4
    overrides = run_overrides(tmp_path / "run", num_updates=updates) + [
        "habitat_baselines.rl.ddppo.sync_frac=0.5"] + _slow_rank1(40)
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
        # Once the counter reached S the straggler stopped; its last step was
        # already under way, so it may have added up to N more than S needed.
        assert fast_stats[u]["fresh"] + slow_stats[u]["fresh"] <= target + 2
        # The fast rank waits for the slow one about a learning time at most
        # (plus the slow env's step in flight, 80 ms, and scheduling slack).
        wait = slow_stats[u]["end_time"] - fast_stats[u]["end_time"]
        assert wait <= fast_stats[u]["learn_s_before"] + 0.08 + 0.5
    # Steps are counted once: the fresh steps of both ranks, stale ones not.
    fresh = sum(r["fresh"] for r in fast_stats + slow_stats)
    assert fast["num_steps_done"] == slow["num_steps_done"] == fresh
