"""``ver`` on 2 torchrun ranks of a HAB skill on the real simulator.

``rearrange/ver_close_cab`` in its CPU profile on make_hab_dataset's data
(fixture ``hab_run_dir``), one env per rank: each rank says where it renders,
VER's distributed preemption plans every rollout after the first, each
rollout stops at its plan, and a rank cut short fills its batch with the
previous rollout's steps.  Without CUDA the ranks use GLOO (the skill
configs say NCCL).
"""

import subprocess
import sys

import pytest

from tests.sim.conftest import assert_ver_ranks_trained, free_port, real_sim_env

pytestmark = pytest.mark.sim

RANKS, T, UPDATES = 2, 16, 3
BATCH = RANKS * T  # one env per rank


def test_ver_on_two_ranks_trains_a_hab_skill_with_preemption_and_stale_fill(hab_run_dir, tmp_path):
    command = [
        *(sys.executable, "-m", "torch.distributed.run", "--standalone"),
        f"--nproc_per_node={RANKS}",
        *("-m", "habitat_baselines.run", "--config-name=rearrange/ver_close_cab"),
        *("hab_data=generated", "hab_profile=cpu"),
        "habitat_baselines.num_environments=1",
        f"habitat_baselines.rl.ppo.num_steps={T}",
        "habitat_baselines.rl.ppo.num_mini_batch=1",
        f"habitat_baselines.num_updates={UPDATES}",
        "habitat_baselines.total_num_steps=-1",
        "habitat_baselines.num_checkpoints=1",
        "habitat_baselines.learner.num_threads=1",
        f"habitat_baselines.checkpoint_folder={tmp_path / 'ckpt'}",
        f"habitat_baselines.tensorboard_dir={tmp_path / 'tb'}",
        f"habitat_baselines.log_file={tmp_path / 'train.log'}",
    ]
    env = dict(real_sim_env(), MAIN_PORT=str(free_port()), GLOO_SOCKET_IFNAME="lo")
    done = subprocess.run(
        command, cwd=str(hab_run_dir), env=env, capture_output=True, text=True, timeout=1200
    )
    logged = assert_ver_ranks_trained(done, tmp_path, RANKS, UPDATES, T)
    planned, stale = logged["planned"], logged["stale"]
    # Rollout u stopped once S(u-1) steps arrived over both ranks (steps in
    # flight add at most one per env); the rest of its batch is stale fill.
    for s, fraction in zip(planned[:-1], stale[1:]):
        fresh = round((1 - fraction) * BATCH)
        assert s <= fresh <= min(s + RANKS, BATCH), (planned, stale)
    # The plan cuts: fewer steps than both ranks' buffers at least once.
    assert min(planned[:-1]) < BATCH, planned
