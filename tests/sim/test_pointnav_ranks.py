"""``ver`` on 2 torchrun ranks on the real simulator (PointNav on simple_room).

The user's command, ``torchrun --standalone --nproc_per_node 2 -m
habitat_baselines.run --config-name=pointnav/ver_simple_room``: each rank
says where it renders (the CPU here: upstream set every rank's device to its
local rank, and without CUDA every env failed), and VER's distributed half
runs: each update plans the next rollout's preemption, and a rank cut short
fills its batch with the previous rollout's steps.  A SIGTERM to one rank
stops both after the same update and the same command resumes; a SIGKILLed
rank ends the run, named.
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

import pytest
import torch

from habitat_ver.common.checkpoint import ResumeStateFiles

from .conftest import (
    RENDERS,
    assert_ver_ranks_trained,
    dataset_overrides,
    free_port,
    real_sim_env,
)

pytestmark = pytest.mark.sim

RANKS, NUM_ENVS, T, UPDATES = 2, 2, 16, 4
BATCH = RANKS * NUM_ENVS * T  # the steps of one update over both ranks


def _overrides(data, out, updates: int = UPDATES) -> list:
    return [
        *dataset_overrides(data),
        f"habitat_baselines.num_updates={updates}",
        "habitat_baselines.total_num_steps=-1",
        "habitat_baselines.num_checkpoints=1",
        f"habitat_baselines.num_environments={NUM_ENVS}",
        f"habitat_baselines.rl.ppo.num_steps={T}",
        "habitat_baselines.rl.ppo.hidden_size=32",
        "habitat.environment.max_episode_steps=20",
        f"habitat_baselines.checkpoint_folder={out / 'ckpt'}",
        f"habitat_baselines.tensorboard_dir={out / 'tb'}",
        f"habitat_baselines.log_file={out / 'train.log'}",
    ]


def _torchrun_command(data, out, updates: int = UPDATES):
    env = dict(real_sim_env(), MAIN_PORT=str(free_port()), GLOO_SOCKET_IFNAME="lo")
    command = [
        *(sys.executable, "-m", "torch.distributed.run", "--standalone"),
        f"--nproc_per_node={RANKS}",
        *("-m", "habitat_baselines.run", "--config-name=pointnav/ver_simple_room"),
        *_overrides(data, out, updates),
    ]
    return command, env


def _torchrun(
    data, out, updates: int = UPDATES, extra: Sequence[str] = ()
) -> subprocess.CompletedProcess:
    command, env = _torchrun_command(data, out, updates)
    command += extra
    return subprocess.run(
        command, cwd=str(out), env=env, capture_output=True, text=True, timeout=900
    )


def _rank_pid(agent: int, rank: int) -> int:
    """The process of ``rank`` among torchrun's (``agent``'s) children."""
    for task in os.listdir(f"/proc/{agent}/task"):
        for child in Path(f"/proc/{agent}/task/{task}/children").read_text().split():
            environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
            if f"RANK={rank}".encode() in environ:
                return int(child)
    raise AssertionError(f"torchrun {agent} has no rank {rank}")


def _signal_rank_once_trained(data, out, updates: int, signum: int, past_update: int):
    """torchrun ``updates`` updates; ``signum`` to rank 1 once the resume state
    is past ``past_update``.  Returns the finished process and its output."""
    command, env = _torchrun_command(data, out, updates)
    files = ResumeStateFiles(str(out / "ckpt"))
    with open(out / "console.txt", "w") as console:  # a full pipe would block the run
        proc = subprocess.Popen(command, cwd=str(out), env=env, stdout=console, stderr=console)
    try:
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None, (out / "console.txt").read_text()[-3000:]
            assert time.monotonic() < deadline, "no update within 10 minutes"
            saved = (out / "ckpt" / "resume-state.pth").exists() and files.load()
            if saved and saved["requeue_stats"]["num_updates_done"] > past_update:
                break
            time.sleep(0.5)
        os.kill(_rank_pid(proc.pid, 1), signum)
        sent = time.monotonic()
        proc.wait(timeout=120)
        return proc, time.monotonic() - sent, (out / "console.txt").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()


def _start_slurm_tasks(config: str, data, out, updates: int) -> tuple:
    """Both ranks as SLURM's srun starts them: one process each, told its
    place by SLURM's variables; returns them and their output files."""
    env = dict(real_sim_env(), MAIN_PORT=str(free_port()), MAIN_ADDR="127.0.0.1")
    env.update(GLOO_SOCKET_IFNAME="lo", SLURM_JOBID="1", SLURM_NTASKS=str(RANKS))
    command = [sys.executable, "-m", "habitat_baselines.run", f"--config-name={config}"]
    command += _overrides(data, out, updates)
    logs = [open(out / f"rank{r}.txt", "w+") for r in range(RANKS)]
    ranks = [
        subprocess.Popen(
            command,
            cwd=str(out),
            env=dict(env, SLURM_PROCID=str(r), SLURM_LOCALID=str(r)),
            stdout=logs[r],
            stderr=subprocess.STDOUT,
        )
        for r in range(RANKS)
    ]
    return ranks, logs


def _slurm_tasks(config: str, data, out, updates: int) -> list:
    """Both ranks as SLURM's srun starts them; returns their output, in rank order."""
    ranks, logs = _start_slurm_tasks(config, data, out, updates)
    try:
        codes = [rank.wait(timeout=900) for rank in ranks]
    finally:
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
    assert codes == [0] * RANKS, "\n".join(o[-3000:] for o in outputs)
    return outputs


# Rank 1's envs (global indices NUM_ENVS, NUM_ENVS + 1) wait 100 ms after each step, rank 0's
# 20 ms: rank 1 is the straggler however the machine's load falls, so its
# rollout is cut and filled.
SLOW_RANK = [
    f"habitat_baselines.embedded_env.straggler.{key}={value}"
    for key, value in {
        "enabled": True,
        "speed_factor_max": 1.0,
        "base_step_seconds": 0.02,
        "jitter": 0.0,
        "long_step_prob": 0.0,
        "slow_env_indices": f"[{NUM_ENVS},{NUM_ENVS + 1}]",
        "slow_factor": 5.0,
    }.items()
]


def test_ver_on_two_ranks_renders_on_each_ranks_device_and_preempts(pointnav_data, tmp_path):
    done = _torchrun(pointnav_data, tmp_path, extra=SLOW_RANK)
    logged = assert_ver_ranks_trained(done, tmp_path, RANKS, UPDATES, NUM_ENVS * T)
    planned, stale = logged["planned"], logged["stale"]
    # Rollout u stopped once S(u-1) steps arrived over both ranks; steps in
    # flight then add at most one per env; the rest of the batch is stale.
    for s, fraction in zip(planned[:-1], stale[1:]):
        fresh = round((1 - fraction) * BATCH)
        assert s <= fresh <= min(s + RANKS * NUM_ENVS, BATCH), (planned, stale)
    # The plan after the first rollout (no learning time known yet) stops at
    # the faster rank's full buffer, so the slower rank is cut and fills.
    # Per-env step times t0 < t1 give S = N*T*(1 + t0/t1) (ver_preemption);
    # with the waits alone t0/t1 is 0.2, and it stays under 7/8 until the
    # simulator's own step passes half a second.
    assert planned[0] < BATCH - RANKS * NUM_ENVS, planned
    assert stale[1] > 0, stale


def test_ddppo_on_two_slurm_tasks_trains_on_each_ranks_device(pointnav_data, tmp_path):
    updates = 3
    outputs = _slurm_tasks("pointnav/ddppo_simple_room", pointnav_data, tmp_path, updates)
    expected = "on the CPU (CUDA sees no GPU)" if not torch.cuda.is_available() else "on GPU"
    for rank, output in enumerate(outputs):
        said = RENDERS.findall(output)
        assert len(said) == 1 and said[0][0] == str(rank), output[-3000:]
        assert said[0][1].startswith(expected)
    stats = torch.load(tmp_path / "ckpt" / "resume-state.pth", weights_only=False)
    assert stats["requeue_stats"]["num_updates_done"] == updates
    # DD-PPO preemption may cut a rank's rollout, never below a quarter of T.
    steps = stats["requeue_stats"]["num_steps_done"]
    assert updates * RANKS * NUM_ENVS * (T // 4) <= steps <= updates * BATCH


def test_sigterm_on_one_rank_stops_both_after_one_update_and_the_command_resumes(
    pointnav_data, tmp_path
):
    files = ResumeStateFiles(str(tmp_path / "ckpt"))
    proc, _, console = _signal_rank_once_trained(
        pointnav_data, tmp_path, 10000, signal.SIGTERM, past_update=0
    )
    # Both ranks agreed to stop after the same update (one that went on
    # would wait in the next all-reduce until torchrun timed it out).
    assert proc.returncode == 0, console[-4000:]
    stopped = files.load()["requeue_stats"]
    assert 1 <= stopped["num_updates_done"] < 10000
    # The same command with a budget 2 updates further resumes there.
    target = stopped["num_updates_done"] + 2
    done = _torchrun(pointnav_data, tmp_path, target)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    resumed = files.load()["requeue_stats"]
    assert resumed["num_updates_done"] == target
    # Each of the 2 updates collected at least a full rank's buffer.
    assert resumed["num_steps_done"] >= stopped["num_steps_done"] + 2 * NUM_ENVS * T


def test_a_sigkilled_rank_ends_the_run_within_a_minute_naming_it(pointnav_data, tmp_path):
    proc, seconds, console = _signal_rank_once_trained(
        pointnav_data, tmp_path, 10000, signal.SIGKILL, past_update=0
    )
    assert proc.returncode != 0 and seconds < 60, (seconds, console[-3000:])
    # torchrun's summary names the rank and its signal.
    assert re.search(r"rank\s*:\s*1 \(local_rank: 1\)", console), console[-3000:]
    assert "Signal 9 (SIGKILL)" in console, console[-3000:]


def test_a_sigkilled_slurm_task_ends_the_other_within_a_minute_naming_it(pointnav_data, tmp_path):
    # No launcher watches SLURM tasks (srun without --kill-on-bad-exit): the
    # other rank learns of the loss in its next gradient all-reduce.
    ranks, logs = _start_slurm_tasks("pointnav/ver_simple_room", pointnav_data, tmp_path, 10000)
    try:
        files = ResumeStateFiles(str(tmp_path / "ckpt"))
        deadline = time.monotonic() + 600
        while not ((tmp_path / "ckpt" / "resume-state.pth").exists() and files.load()):
            assert all(r.poll() is None for r in ranks), logs[0].name
            assert time.monotonic() < deadline, "no update within 10 minutes"
            time.sleep(0.5)
        ranks[1].send_signal(signal.SIGKILL)
        sent = time.monotonic()
        code = ranks[0].wait(timeout=120)
        seconds = time.monotonic() - sent
    finally:
        for rank in ranks:
            rank.kill()
    output = Path(logs[0].name).read_text()
    for log in logs:
        log.close()
    assert code == 1 and seconds < 60, (code, seconds, output[-3000:])
    errors = [line for line in output.splitlines() if "habitat_baselines.run: error:" in line]
    assert len(errors) == 1 and "Traceback" not in output, output[-3000:]
    assert errors[0].startswith(
        "habitat_baselines.run: error: rank 0: rank 1 closed its connection (it crashed or "
        "was killed: see its output); this rank stopped at step "
    ), errors[0]
    assert f"(resume state in {tmp_path / 'ckpt'})" in errors[0]
