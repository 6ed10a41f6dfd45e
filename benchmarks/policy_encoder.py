"""Forward+backward time of our visual encoder vs upstream's half-width ResNet18.

One minibatch of ``--batch`` steps (default 1024, VER's minibatch at T*N=2048
and 2 minibatches) of ``--size`` x ``--size`` depth goes forward and backward
through:

* ``ours``: :class:`habitat_ver.policies.visual_encoder.VisualEncoder`
  (ConvNeXt-style half-width ResNet18 + compression);
* ``upstream_backbone``: habitat-baselines' ``resnet18(1, 32, 16)``
  (``rl/ddppo/policy/resnet.py``, half width, GroupNorm with 16 groups) on
  the same input — the architecture comparison;
* ``upstream_encoder``: habitat-baselines' ``ResNetEncoder`` around that
  backbone, as upstream's policies use it; note it average-pools its input
  2x2 first (DD-PPO's 256 -> 128), so at 128x128 its backbone sees 64x64.

Prints one JSON object with the median seconds per minibatch, the ratios
ours/upstream, git SHA, device and torch version. Example::

    python benchmarks/policy_encoder.py --batch 256 --reps 3
    python benchmarks/policy_encoder.py --device cuda --channels-last --amp
"""

import argparse
import json
import statistics
import time
from typing import Callable, Dict

import numpy as np
import torch

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
import sps_report
from gym import spaces
from habitat_baselines.rl.ddppo.policy import resnet
from habitat_baselines.rl.ddppo.policy.resnet_policy import ResNetEncoder
from torch import nn

from habitat_ver.policies.visual_encoder import VisualEncoder


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=1024, help="steps per minibatch")
    p.add_argument("--size", type=int, default=128, help="depth image side (pixels)")
    p.add_argument(
        "--reps", type=int, default=None, help="timed repetitions (default 3 on CPU, 20 on CUDA)"
    )
    p.add_argument("--warmup", type=int, default=1, help="untimed repetitions")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--channels-last", action="store_true", help="NHWC weights and inputs")
    p.add_argument("--amp", action="store_true", help="bfloat16/float16 autocast")
    return p.parse_args()


class _Backbone(nn.Module):
    """Upstream's bare backbone, fed the same NCHW float depth as ours."""

    def __init__(self, channels_last: bool):
        super().__init__()
        self.net = resnet.resnet18(1, 32, 16)
        self._fmt = torch.channels_last if channels_last else torch.contiguous_format

    def forward(self, obs: Dict[str, torch.Tensor]) -> torch.Tensor:
        x = obs["depth"].permute(0, 3, 1, 2).contiguous(memory_format=self._fmt)
        return self.net(x).flatten(1)


def _models(args, space) -> Dict[str, nn.Module]:
    ours = VisualEncoder(space, ["depth"])
    upstream = ResNetEncoder(space, baseplanes=32, ngroups=16, make_backbone=resnet.resnet18)
    models = {
        "ours": ours,
        "upstream_backbone": _Backbone(args.channels_last),
        "upstream_encoder": upstream,
    }
    if args.channels_last:
        ours.use_channels_last()
        for name in ("upstream_backbone", "upstream_encoder"):
            models[name].to(memory_format=torch.channels_last)
    return {k: m.to(args.device) for k, m in models.items()}


def median_seconds(step: Callable[[], None], device: str, reps: int, warmup: int) -> float:
    """Median wall seconds of ``reps`` calls of ``step`` after ``warmup`` untimed ones
    (CUDA synchronised around each)."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(reps):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    args = _parse()
    reps = args.reps or (20 if args.device.startswith("cuda") else 3)
    space = spaces.Dict({"depth": spaces.Box(0.0, 1.0, (args.size, args.size, 1), np.float32)})
    obs = {"depth": torch.rand(args.batch, args.size, args.size, 1, device=args.device)}
    amp_dtype = torch.float16 if args.device.startswith("cuda") else torch.bfloat16
    results, params = {}, {}
    for name, model in _models(args, space).items():
        params[name] = sum(p.numel() for p in model.parameters())

        def step(model=model):
            model.zero_grad(set_to_none=True)
            with torch.autocast(args.device.split(":")[0], dtype=amp_dtype, enabled=args.amp):
                out = model(obs)
            out.float().square().mean().backward()

        results[name] = median_seconds(step, args.device, reps, args.warmup)
    print(
        json.dumps(
            {
                "benchmark": "policy_encoder",
                "git_sha": sps_report.git_sha(),
                "device": (
                    torch.cuda.get_device_name(args.device)
                    if args.device.startswith("cuda")
                    else "cpu"
                ),
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                "batch": args.batch,
                "size": args.size,
                "reps": reps,
                "channels_last": args.channels_last,
                "amp": args.amp,
                "seconds_per_minibatch": results,
                "parameters": params,
                "ratio_ours_over_upstream_backbone": results["ours"] / results["upstream_backbone"],
                "ratio_ours_over_upstream_encoder": results["ours"] / results["upstream_encoder"],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
