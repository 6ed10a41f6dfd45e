"""Each rank's render (and torch) device: the CPU without CUDA, else its own GPU."""

import pytest
import torch

from habitat_ver.config.compose import get_config
from habitat_ver.distributed.rank_devices import rank_backend, rank_render_device, use_rank_devices

GPU_KEY = "habitat.simulator.habitat_sim_v0.gpu_device_id"


@pytest.fixture
def gpus(monkeypatch):
    """Sets how many GPUs CUDA sees (0: none)."""

    def see(count: int) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)

    return see


@pytest.mark.parametrize("local_rank", [0, 1, 5])
def test_every_rank_renders_on_the_cpu_where_cuda_sees_no_gpu(gpus, local_rank):
    gpus(0)
    assert rank_render_device(local_rank) == -1


@pytest.mark.parametrize(
    "count, local_rank, expected",
    [
        (1, 0, 0),
        (1, 1, 0),  # 1 % 1: both ranks share the one GPU
        (2, 1, 1),
        (2, 3, 1),  # 3 % 2
        (4, 6, 2),  # 6 % 4
    ],
)
def test_a_rank_renders_on_its_local_rank_modulo_the_gpus_seen(gpus, count, local_rank, expected):
    gpus(count)
    assert rank_render_device(local_rank) == expected


def test_the_config_gets_the_rank_device_whatever_it_said(gpus):
    config = get_config("pointnav/ver_simple_room", [f"{GPU_KEY}=3"])
    gpus(0)
    line = use_rank_devices(config, local_rank=1, rank=1)
    assert config.habitat.simulator.habitat_sim_v0.gpu_device_id == -1
    assert config.habitat_baselines.torch_gpu_id == 0  # unused on the CPU; left as it was
    assert line == f"rank 1: habitat-sim renders on the CPU (CUDA sees no GPU): {GPU_KEY}=-1"

    config = get_config("pointnav/ver_simple_room", [f"{GPU_KEY}=-1"])
    gpus(2)
    line = use_rank_devices(config, local_rank=3, rank=7)
    assert config.habitat.simulator.habitat_sim_v0.gpu_device_id == 1
    assert config.habitat_baselines.torch_gpu_id == 1  # torch learns on the same GPU
    assert line == f"rank 7: habitat-sim renders on GPU 1 of 2 (local rank 3): {GPU_KEY}=1"


@pytest.mark.parametrize(
    "backend, count, expected",
    [("NCCL", 0, "GLOO"), ("nccl", 0, "GLOO"), ("NCCL", 1, "NCCL"), ("GLOO", 0, "GLOO")],
)
def test_nccl_becomes_gloo_only_where_cuda_sees_no_gpu(gpus, backend, count, expected):
    key = "habitat_baselines.rl.ddppo.distrib_backend"
    config = get_config("gym/ver_cartpole", [f"{key}={backend}"])
    gpus(count)
    line = rank_backend(config)
    assert config.habitat_baselines.rl.ddppo.distrib_backend == (
        expected if expected != backend.upper() else backend
    )
    changed = expected != backend.upper()
    assert line == (
        f"{key}=NCCL needs CUDA, which sees no GPU here: the ranks use GLOO" if changed else ""
    )
