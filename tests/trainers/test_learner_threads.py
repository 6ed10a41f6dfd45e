"""The learner takes the idle cores during lock-step updates, and only then."""

import pytest
import torch

import habitat_ver.common.learner_threads as learner_threads_module
from habitat_ver.common.learner_threads import cores_per_process, learner_threads
from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp

from .conftest import run_overrides

CPU = torch.device("cpu")


@pytest.fixture
def one_thread_two_cores(monkeypatch):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch.setattr(learner_threads_module, "cores_per_process", lambda: 2)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize(
    "envs_idle, device, inside",
    [(True, CPU, 2), (False, CPU, 1), (True, torch.device("cuda"), 1)],
)
def test_threads_inside_and_after_the_block(one_thread_two_cores, envs_idle, device, inside):
    with learner_threads(envs_idle, device):
        assert torch.get_num_threads() == inside
    assert torch.get_num_threads() == 1


def test_a_process_gets_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(learner_threads_module.os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "3")
    assert cores_per_process() == 2
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "16")
    assert cores_per_process() == 1
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert cores_per_process() == 8


@pytest.mark.parametrize(
    "config, extra, during",
    [
        ("gym/ddppo_cartpole", [], [2, 2]),
        ("gym/ver_cartpole", [], [2, 2]),
        ("gym/ver_cartpole", ["habitat_baselines.rl.ver.overlap_rollouts_and_learn=True"], [1, 1]),
    ],
)
def test_lock_step_updates_learn_on_the_idle_cores(
    one_thread_two_cores, monkeypatch, out_dir, config, extra, during
):
    from habitat_ver.updaters.ppo import PPOUpdater

    seen = []
    update = PPOUpdater.update

    def counting_update(self, rollouts):
        seen.append(torch.get_num_threads())
        return update(self, rollouts)

    monkeypatch.setattr(PPOUpdater, "update", counting_update)
    execute_exp(get_config(config, run_overrides(out_dir, 2) + extra), "train")
    assert seen == during
    assert torch.get_num_threads() == 1
