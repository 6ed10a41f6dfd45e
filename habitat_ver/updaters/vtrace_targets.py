"""``vtrace`` (``appo``): V-trace targets recomputed on every minibatch.

The data was collected by several policy versions, so each minibatch's targets
are recomputed from the CURRENT critic's values of all ``T + 1`` steps and the
current policy's ratios to the policy that acted, truncated at rho-bar and
c-bar (V-trace, IMPALA, Espeholt et al. 2018, section 4; Sample Factory,
Petrenko et al. 2020, section 3.4).  Advantages are normalised per minibatch,
as Sample Factory does.
"""

from dataclasses import dataclass
from typing import Any, Dict, Optional

from torch import Tensor

from habitat_ver.algo.vtrace import vtrace
from habitat_ver.updaters.targets import Evaluated, TargetsStep

__all__ = ["VTraceTargets"]


@dataclass
class VTraceTargets(TargetsStep):
    """V-trace targets on each minibatch of whole trajectories.

    The minibatch (:meth:`~habitat_ver.system.appo_buffers.TrajectoryBatch.data_generator`)
    holds ``b`` trajectories of ``T`` steps plus the bootstrap observation,
    flattened time-major (``[(T + 1) * b, ...]``) for one packed forward; the
    per-step tensors ``action_log_probs``, ``value_preds`` are ``[T * b, 1]``
    and ``rewards``, ``dones``, ``truncated`` ``[T, b, 1]``.

    Attributes:
        gamma: discount (``rl.ppo.gamma``).
        rho_clip: rho-bar (``rl.appo.vtrace_rho_clip``).
        c_clip: c-bar (``rl.appo.vtrace_c_clip``).
        normalize_advantage: ``rl.ppo.use_normalized_advantage``.
    """

    gamma: float
    rho_clip: float = 1.0
    c_clip: float = 1.0
    normalize_advantage: bool = True

    @classmethod
    def from_config(cls, config: Any) -> "VTraceTargets":
        """From ``habitat_baselines.rl.ppo`` and ``habitat_baselines.rl.appo``."""
        rl = config.habitat_baselines.rl
        return cls(
            gamma=float(rl.ppo.gamma),
            rho_clip=float(rl.appo.vtrace_rho_clip),
            c_clip=float(rl.appo.vtrace_c_clip),
            normalize_advantage=bool(rl.ppo.use_normalized_advantage),
        )

    def before_epochs(self, updater: Any, rollouts: Any) -> Optional[Tensor]:
        return None

    def on_minibatch(
        self, batch: Dict[str, Any], values: Tensor, log_probs: Tensor, entropy: Tensor
    ) -> Evaluated:
        """V-trace on the current values; drops the bootstrap row.

        Shapes:
            values, log_probs: ``[(T + 1) * b, 1]``; entropy ``[(T + 1) * b, k]``;
            returns ``[T * b, 1]``, ``[T * b, 1]``, ``[T * b, k]``.
        """
        T, b = batch["rewards"].shape[:2]
        values = values.view(T + 1, b, 1)
        log_probs = log_probs.view(T + 1, b, 1)[:-1]
        entropy = entropy.view(T + 1, b, -1)[:-1]
        cut = batch["truncated"]
        # A cut's next observation is the next episode's first: the cut
        # step's own value stands in for the value after it (Sample Factory).
        truncation = dict(truncated=cut, truncation_values=values[:-1]) if bool(cut.any()) else {}
        targets = vtrace(
            batch["action_log_probs"].view(T, b, 1),
            log_probs,
            batch["rewards"],
            values[:-1],
            batch["dones"],
            values[-1],
            self.gamma,
            self.rho_clip,
            self.c_clip,
            **truncation,
        )
        advantages = targets.pg_advantages
        if self.normalize_advantage:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-5)
        batch["advantages"] = advantages.reshape(T * b, 1)
        batch["returns"] = targets.vs.reshape(T * b, 1)
        batch["vtrace_rhos"] = targets.clipped_rhos
        return values[:-1].reshape(T * b, 1), log_probs.reshape(T * b, 1), entropy.flatten(0, 1)

    def metrics(self, batch: Dict[str, Any]) -> Dict[str, Tensor]:
        return {"learner/vtrace_rho_mean": batch["vtrace_rhos"].mean()}
