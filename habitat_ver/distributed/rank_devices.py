"""The devices a rank of a multi-rank run renders and learns on.

Upstream's ``PPOTrainer._init_train`` sets habitat-sim's ``gpu_device_id`` and
``torch_gpu_id`` to the local rank whenever the run is distributed.  On a
machine without CUDA that makes every env of rank ``r`` fail with ``unable to
find CUDA device r among 1 EGL devices`` (habitat-sim picks its EGL device by
CUDA id), and with fewer GPUs than local ranks the extra ranks fail the same
way.  The trainer replaces that choice, before any env is built, with
:func:`rank_render_device`: the CPU where CUDA sees no GPU, else the local rank
modulo the GPUs seen, whatever the config says.

The same goes for the ranks' collective backend: ``NCCL`` (the HAB skills')
needs CUDA, and without it every rank failed in ``init_process_group``
(``ProcessGroupNCCL is only supported with GPUs``).  :func:`rank_backend`
makes it ``GLOO`` there.
"""

from typing import Any

import torch
from habitat.config import read_write

from habitat_ver.config.schema import render_gpu
from habitat_ver.config.validate_envs import GPU_DEVICE_KEY

__all__ = ["rank_backend", "rank_render_device", "use_rank_devices"]

# habitat-sim's device id for rendering on the CPU (Mesa's llvmpipe via EGL).
CPU_RENDERING = -1
BACKEND_KEY = "habitat_baselines.rl.ddppo.distrib_backend"


def rank_backend(config: Any) -> str:
    """Sets ``config``'s collective backend to ``GLOO`` where it is ``NCCL``
    and CUDA sees no GPU (changed in place); returns the line that says so,
    or "" when the backend stays."""
    ddppo = config.habitat_baselines.rl.ddppo
    if str(ddppo.distrib_backend).upper() != "NCCL" or torch.cuda.is_available():
        return ""
    with read_write(config):
        ddppo.distrib_backend = "GLOO"
    return f"{BACKEND_KEY}=NCCL needs CUDA, which sees no GPU here: the ranks use GLOO"


def rank_render_device(local_rank: int) -> int:
    """habitat-sim's ``gpu_device_id`` for the rank with ``local_rank``.

    Args:
        local_rank: the rank's index on its node (torchrun's ``LOCAL_RANK``,
            SLURM's ``SLURM_LOCALID``).

    Returns:
        -1 (the CPU) where CUDA sees no GPU, else ``local_rank`` modulo the
        number of GPUs CUDA sees.
    """
    # device_count() is 0 without CUDA; render_gpu then says -1 anyway.
    return render_gpu(local_rank % max(torch.cuda.device_count(), 1))


def use_rank_devices(config: Any, local_rank: int, rank: int) -> str:
    """Sets ``config``'s render device, and torch's (where CUDA sees a GPU),
    to this rank's; returns the line that says which.

    Args:
        config: the run's config (changed in place).
        local_rank: the rank's index on its node.
        rank: the rank's global index (for the line only).
    """
    device = rank_render_device(local_rank)
    with read_write(config):
        config.habitat.simulator.habitat_sim_v0.gpu_device_id = device
        if device != CPU_RENDERING:
            # Upstream's get_device calls torch.cuda.set_device with this id.
            config.habitat_baselines.torch_gpu_id = device
    where = (
        "on the CPU (CUDA sees no GPU)"
        if device == CPU_RENDERING
        else f"on GPU {device} of {torch.cuda.device_count()} (local rank {local_rank})"
    )
    return f"rank {rank}: habitat-sim renders {where}: {GPU_DEVICE_KEY}={device}"
