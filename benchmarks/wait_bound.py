"""The wait-bound limit of a straggler workload: the steps/s no trainer can beat.

Env ``i`` waits ``s_i * (b * J + L_s * L)`` after every step (see
``habitat_ver/envs/straggler.py``), mean ``w_i = s_i * (b + p * L_s)`` since
``E[J] = 1`` and ``E[L] = p``.  An env that is never kept waiting for its
action does at most ``1 / w_i`` steps/s, so all of them together at most

    limit = sum_i 1 / w_i = sum_i 1 / (s_i * (b + p * L_s))

(Doom's own CPU time and inference only lower the reachable rate).
:func:`env_ceiling` measures what the workload's real envs reach on this
machine when nobody computes anything between a result and the next action:
Doom's own step, ``time.sleep``'s overshoot and the worker pipes included,
so a trainer's collection is compared with what its envs allow here; with
``with_inference`` the same loop also runs the config's policy on each ready
batch (the *inference ceiling*: collection whose only work is inference).  The speed
factors ``s_i`` are the ones the run's envs draw: the same sampler, seed and
global env index.  :func:`measured_limit` checks the formula on this machine:
it steps the wrapper around a no-op env in one thread per env for a few
seconds and compares the rate with the limit and the wrapper's own
``total_delay_s`` (``time.sleep`` overshoots a little, more under load).
"""

import threading
import time
from typing import Any, Dict, List

from habitat_ver.envs.straggler import StepDelaySampler, StragglerWrapper


def mean_waits(straggler: Any, num_envs: int, first_index: int = 0) -> List[float]:
    """Mean wait per step of each env, seconds (``s_i * (b + p * L_s)``).

    Args:
        straggler: a ``StragglerConfig`` (or a DictConfig of that shape).
        num_envs: number of envs.
        first_index: global index of the first env (rank r owns r*N..).
    """
    return [StepDelaySampler(straggler, first_index + i).mean_delay() for i in range(num_envs)]


def wait_bound_limit(waits: List[float]) -> float:
    """``sum_i 1 / w_i`` steps/s for mean waits ``w_i`` (seconds, > 0)."""
    if not waits or min(waits) <= 0:
        raise ValueError(f"mean waits must be > 0 seconds, got {waits}")
    return sum(1.0 / w for w in waits)


class _NoOpEnv:
    """The smallest env the wrapper accepts: steps cost nothing."""

    observation_space = None
    action_space = None
    reward_range = (0.0, 0.0)
    metadata: Dict[str, Any] = {}
    spec = None

    def step(self, action: Any) -> Any:
        return None, 0.0, False, {}

    def reset(self, **kwargs: Any) -> Any:
        return None


def measured_limit(straggler: Any, num_envs: int, seconds: float) -> Dict[str, float]:
    """Steps/s of ``num_envs`` wrapped no-op envs stepping freely for ``seconds``.

    Returns:
        ``steps_per_s`` (measured), ``delay_share`` (the wrappers'
        ``total_delay_s`` over thread wall time: 1 means ``time.sleep`` slept
        exactly what was drawn) and ``drawn_mean_wait_s`` per env (averaged).
    """
    envs = [StragglerWrapper(_NoOpEnv(), straggler, i) for i in range(num_envs)]  # type: ignore[arg-type]
    counts = [0] * num_envs
    deadline = time.monotonic() + seconds

    def run(i: int) -> None:
        while time.monotonic() < deadline:
            envs[i].step(0)
            counts[i] += 1

    start = time.monotonic()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(num_envs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - start
    drawn = [env.total_delay_s / max(n, 1) for env, n in zip(envs, counts)]
    return dict(
        steps_per_s=sum(counts) / wall,
        delay_share=sum(env.total_delay_s for env in envs) / (wall * num_envs),
        drawn_mean_wait_s=sum(drawn) / len(drawn),
    )


def env_ceiling(
    config: str,
    overrides: List[str],
    seconds: float,
    with_inference: bool = False,
    zero_action: bool = False,
) -> Dict[str, float]:
    """Steps/s of the workload's own envs, each in its :class:`PerEnvPool`
    worker, answered at once with a fixed action (no policy, no storage).

    With ``with_inference`` each ready batch is answered by the config's
    policy instead (one torch thread, as the trainers run on the CPU; no
    storage, no statistics): the *inference ceiling*, what a collector whose
    only work is inference would reach.  The fixed action is one sample of
    the action space, or with ``zero_action`` all zeros (the robot stands
    still: the same work on every scene).  Counted over ``seconds`` after one
    second of stepping (start-up excluded).

    Returns:
        ``steps_per_s``, ``seconds`` and ``envs_per_batch`` (mean batch).
    """
    import torch

    from habitat_ver.config.compose import get_config
    from habitat_ver.envs.factory import env_builders
    from habitat_ver.system.per_env_pool import PerEnvPool

    cfg = get_config(config, overrides)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with PerEnvPool([make for _, make in env_builders(cfg)]) as pool:
            if with_inference:
                answer = _inference(cfg, pool)
            else:
                answer = _fixed_action(pool, zero_action)
            pool.reset()
            answer(torch.arange(pool.num_envs), True)
            steps, batches, start = 0, 0, None
            warm_until = time.monotonic() + 1.0
            while start is None or time.monotonic() - start < seconds:
                ids = torch.tensor(pool.wait_ready(pool.num_envs))
                answer(ids, False)
                if start is None:
                    if time.monotonic() >= warm_until:
                        start = time.monotonic()
                else:
                    steps, batches = steps + len(ids), batches + 1
            wall = time.monotonic() - start
    finally:
        torch.set_num_threads(threads)
    return dict(steps_per_s=steps / wall, seconds=wall, envs_per_batch=steps / max(batches, 1))


def _fixed_action(pool: Any, zero: bool = False) -> Any:
    import torch

    action = torch.as_tensor(pool.action_space.sample()).view(1, -1)
    if zero:
        action = torch.zeros_like(action)

    def answer(ids: Any, first: bool) -> None:
        pool.send_actions(ids, action.repeat(len(ids), 1))

    return answer


def _inference(cfg: Any, pool: Any) -> Any:
    """Answers ready envs with the config's policy (recurrent state kept per env)."""
    import torch
    from habitat_baselines.common.baseline_registry import baseline_registry

    from habitat_ver.policies.agent_config import agent_policy_config

    policy_cfg = agent_policy_config(cfg, None)
    policy_cls = baseline_registry.get_policy(policy_cfg.name)
    policy = policy_cls.from_config(cfg, pool.observation_space, pool.action_space).eval()
    n = pool.num_envs
    hidden = torch.zeros(n, policy.num_recurrent_layers, policy.recurrent_hidden_size)
    # long for discrete actions, float for continuous ones (the pool's own buffer)
    prev_actions = torch.zeros_like(pool.buffers.actions)

    def answer(ids: Any, first: bool) -> None:
        observations, _, dones, _ = pool.read(ids)
        masks = torch.logical_not(dones).view(-1, 1) & (not first)
        with torch.inference_mode():
            out = policy.act(observations, hidden[ids], prev_actions[ids], masks)
        pool.send_actions(ids, out.env_actions)
        hidden[ids] = out.rnn_hidden_states
        prev_actions[ids] = out.actions

    return answer
