"""Inference latency of a config's policy: eager against the usual speed-ups.

``ver`` serves whichever envs are ready, so on the wait-bound workload (c) most
inference calls are for one to four envs, and the trainer's single torch thread
pays the policy's ``act`` once per call.  This script times that call for the
policy a config builds (its own env's spaces, one env built to read them) at
the batch sizes ``--batches``, for these variants, interleaved round by round
in one run so that load on the machine hits them alike:

* ``eager``: the policy as the trainers run it (fp32, inference mode);
* ``channels_last``: the weights in channels-last memory format;
* ``autocast``: bf16 autocast on CPU, fp16 on CUDA;
* ``compile``: ``torch.compile`` of the policy's net (dynamic batch; the
  compile time is reported apart and excluded from the timings).

Prints one JSON object: median milliseconds per ``act`` call for each variant
and batch, the ratio of each to ``eager`` (below 1 = faster), the compile time,
git SHA, device, torch version and threads.  Example::

    python benchmarks/policy_act.py --config-name doom/ddppo_wait_bound
    python benchmarks/policy_act.py --device cuda --config-name doom/ddppo_wait_bound
"""

import argparse
import contextlib
import json
import statistics
import time
from typing import Any, Callable, ContextManager, Dict, List

import numpy as np
import torch
from gym import spaces

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
import sps_report
from habitat_baselines.common.baseline_registry import baseline_registry

from habitat_ver.config.compose import get_config
from habitat_ver.envs.builder import build_env
from habitat_ver.policies.agent_config import agent_policy_config

VARIANTS = ("eager", "channels_last", "autocast", "compile")


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


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config-name", default="doom/ddppo_wait_bound", help="the policy's config")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4, 8], help="envs per call")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds per batch")
    p.add_argument("--calls", type=int, default=100, help="timed calls per variant and round")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument(
        "--threads", type=int, default=1, help="torch threads (the trainers' inference uses 1)"
    )
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    return p.parse_args()


def _policy_name(config: Any) -> str:
    section = agent_policy_config(config, None)
    assert section is not None, "the config has no habitat_baselines.rl.policy section"
    return str(section.name)


def _build_policy(config: Any, device: torch.device) -> Any:
    """The policy the config's trainer builds, on its first env's spaces."""
    env = build_env(config, 0)
    try:
        obs_space, action_space = env.observation_space, env.action_space
    finally:
        env.close()
    name = _policy_name(config)
    policy = baseline_registry.get_policy(name).from_config(config, obs_space, action_space)
    return policy.to(device).eval(), obs_space, action_space


def _inputs(
    policy: Any, obs_space: Any, action_space: Any, batch: int, device: torch.device
) -> List[Any]:
    """``act``'s arguments for ``batch`` envs: sampled observations, zero state."""
    obs = {}
    for key, space in obs_space.spaces.items():
        sample = torch.as_tensor(space.sample()).unsqueeze(0).repeat(batch, *[1] * len(space.shape))
        obs[key] = sample.to(device)
    hidden = torch.zeros(
        batch, policy.net.num_recurrent_layers, policy.net.recurrent_hidden_size, device=device
    )
    if isinstance(action_space, spaces.Discrete):
        prev = torch.zeros(batch, 1, dtype=torch.long, device=device)
    else:
        prev = torch.zeros(batch, int(np.prod(action_space.shape)), device=device)
    masks = torch.ones(batch, 1, dtype=torch.bool, device=device)
    return [obs, hidden, prev, masks]


def main() -> None:
    args = _parse()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    config = get_config(args.config_name, [])
    policies = {}
    compile_s = None
    for variant in args.variants:
        policy, obs_space, action_space = _build_policy(config, device)
        if variant == "channels_last":
            policy = policy.to(memory_format=torch.channels_last)
        if variant == "compile":
            policy.net = torch.compile(policy.net, dynamic=True)
        policies[variant] = policy
    amp_dtype = torch.float16 if args.device.startswith("cuda") else torch.bfloat16

    def context(variant: str) -> ContextManager[Any]:
        if variant == "autocast":
            return torch.autocast(device.type, dtype=amp_dtype)
        return contextlib.nullcontext()

    medians: Dict[str, Dict[int, List[float]]] = {v: {} for v in args.variants}
    for batch in args.batches:
        inputs = {
            v: _inputs(p, obs_space, action_space, batch, device) for v, p in policies.items()
        }
        for variant in args.variants:  # warm up (and compile) each batch size untimed
            t0 = time.perf_counter()
            with torch.inference_mode(), context(variant):
                policies[variant].act(*inputs[variant])
            if variant == "compile":
                compile_s = (compile_s or 0.0) + time.perf_counter() - t0
        for _ in range(args.rounds):
            for variant in args.variants:
                policy, given = policies[variant], inputs[variant]

                def call(policy=policy, given=given, variant=variant) -> Any:
                    with torch.inference_mode(), context(variant):
                        return policy.act(*given)

                seconds = median_seconds(call, args.device, args.calls, warmup=1)
                medians[variant].setdefault(batch, []).append(seconds * 1e3)
    ms = {v: {b: statistics.median(r) for b, r in per.items()} for v, per in medians.items()}
    ratios = {
        v: {b: ms[v][b] / ms["eager"][b] for b in args.batches}
        for v in args.variants
        if "eager" in ms and v != "eager"
    }
    print(
        json.dumps(
            {
                "benchmark": "policy_act",
                "git_sha": sps_report.git_sha(),
                "config": args.config_name,
                "policy": _policy_name(config),
                "device": (torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"),
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                "rounds": args.rounds,
                "calls": args.calls,
                "ms_per_act": ms,
                "ratio_to_eager": ratios,
                "compile_s": compile_s,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
