"""Stragglers: injected per-step delays reproducing heterogeneous env speed.

VER (paper section 1 and Figure 1) is built for environments whose step time
varies across envs (episode-level: a heavy scene, a slow node) and across
steps (action-level: a physics-heavy grasp, a cache miss).  The wrapper here
reproduces both on any env:

* a per-env speed factor ``s``, drawn once, log-uniform in
  ``[speed_factor_min, speed_factor_max]`` and multiplied by ``slow_factor``
  for the env indices in ``slow_env_indices`` (a deterministic straggler, for
  tests of preemption);
* after every step a wait of ``s * (base_step_seconds * J + long_step_seconds * L)``
  with ``J = exp(N(-jitter**2 / 2, jitter**2))`` (mean 1) and
  ``L ~ Bernoulli(long_step_prob)``, so the mean wait is
  ``s * (base_step_seconds + long_step_prob * long_step_seconds)``.

The wait is ``time.sleep`` — like waiting for a GPU render or a physics
server — so stragglers do not steal CPU from the other envs.
"""

import time
from typing import Any, Optional

import gym
import numpy as np


class StepDelaySampler:
    """Draws the wait after each step of one env; pure and seeded.

    Args:
        config: a ``StragglerConfig`` (or a DictConfig of that shape).
        env_index: global index of the env; selects its random stream and
            whether it is in ``slow_env_indices``.
        seed: overrides ``config.seed`` when given.
    """

    def __init__(self, config: Any, env_index: int, seed: Optional[int] = None):
        self.base_step_seconds = float(config.base_step_seconds)
        self.jitter = float(config.jitter)
        self.long_step_prob = float(config.long_step_prob)
        self.long_step_seconds = float(config.long_step_seconds)
        seed = int(config.seed if seed is None else seed)
        # One stream per (seed, env): envs are independent and reproducible
        # whatever the order in which the worker processes start.
        self._rng = np.random.default_rng([seed, int(env_index)])
        self.speed_factor = self._draw_speed_factor(config, env_index)

    def _draw_speed_factor(self, config: Any, env_index: int) -> float:
        low = float(config.speed_factor_min)
        high = float(config.speed_factor_max)
        factor = float(np.exp(self._rng.uniform(np.log(low), np.log(high))))
        # uniform() may return `high` itself only approximately; keep the
        # documented bounds exact.
        factor = min(max(factor, low), high)
        if env_index in set(config.slow_env_indices):
            factor *= float(config.slow_factor)
        return factor

    def mean_delay(self) -> float:
        """Expected wait of one step, seconds (the analytic mean)."""
        return self.speed_factor * (
            self.base_step_seconds + self.long_step_prob * self.long_step_seconds
        )

    def next_delay(self) -> float:
        """The wait after the next step, seconds (>= 0)."""
        sigma = self.jitter
        jitter = float(self._rng.lognormal(-0.5 * sigma * sigma, sigma))
        is_long = self._rng.random() < self.long_step_prob
        delay = self.base_step_seconds * jitter
        if is_long:
            delay += self.long_step_seconds
        return self.speed_factor * delay


class StragglerWrapper(gym.Wrapper):
    """Waits after every ``step`` for a delay drawn by a :class:`StepDelaySampler`.

    Observations, rewards, dones and infos pass through unchanged; resets are
    not delayed.

    Args:
        env: the env to slow down.
        config: a ``StragglerConfig`` (or a DictConfig of that shape).
        env_index: global index of the env (see :class:`StepDelaySampler`).
        seed: overrides ``config.seed`` when given.

    Attributes:
        sampler: the env's :class:`StepDelaySampler`.
        speed_factor: the env's speed factor (drawn once).
        total_delay_s: seconds of delay injected so far.
    """

    def __init__(self, env: gym.Env, config: Any, env_index: int, seed: Optional[int] = None):
        super().__init__(env)
        self.sampler = StepDelaySampler(config, env_index, seed)
        self.speed_factor = self.sampler.speed_factor
        self.total_delay_s = 0.0

    def step(self, action: Any):
        result = self.env.step(action)
        delay = self.sampler.next_delay()
        if delay > 0.0:
            time.sleep(delay)
        self.total_delay_s += delay
        return result
