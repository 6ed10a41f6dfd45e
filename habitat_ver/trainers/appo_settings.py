"""``habitat_baselines.rl.appo``: the ``appo`` trainer's settings.

Sample Factory's asynchronous PPO (Petrenko et al. 2020, sections 3.1-3.4):
rollout workers that only simulate, a policy worker that batches inference,
a learner that trains on complete trajectories of ``rl.ppo.num_steps`` steps
as soon as a batch of them is ready.  PPO's own keys (``rl.ppo.*``: clip,
epochs, minibatches, lr, gamma, ...) keep their meaning; ``rl.ppo.tau``
(GAE's lambda) is unused, V-trace replaces GAE.

Registered as the config section ``rl.appo`` in :mod:`habitat_ver.registration`.
"""

from dataclasses import dataclass
from typing import Any

from habitat_ver.common.checks import AUTO


@dataclass
class AppoConfig:
    """Asynchronous PPO: workers, batching, V-trace and policy lag."""

    # Rollout worker processes: "auto" (one per env, as ver's env workers: a
    # worker steps its envs one after another, so it adds up their waits), or a
    # divisor of habitat_baselines.num_environments (each owns N / workers envs).
    num_rollout_workers: Any = AUTO
    # Groups each worker's envs are split into and stepped alternately: "auto"
    # (2 where the envs per worker are even, else 1), or a divisor of the envs
    # per worker (double-buffered sampling: 2; 1 turns it off).
    num_env_groups: Any = AUTO
    # Trajectories of rl.ppo.num_steps steps per learner batch (0: num_environments).
    batch_trajectories: int = 0
    # Preallocated trajectory slots in shared memory (0: 2 * batch + num_environments).
    num_trajectory_slots: int = 0
    # V-trace's rho-bar (truncation of the importance ratio in the targets), > 0.
    vtrace_rho_clip: float = 1.0
    # V-trace's c-bar (truncation of the trace coefficients), > 0.
    vtrace_c_clip: float = 1.0
    # Trajectories with a step older than this many policy versions at learning
    # time are dropped (counted in system/dropped_trajectories), >= 0.
    max_policy_lag: int = 20
    # Run the rollout workers in the policy worker's thread (tests, debugging).
    serial: bool = False
