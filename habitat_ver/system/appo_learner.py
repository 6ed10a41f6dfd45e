"""APPO's learner: V-trace targets with PPO's clipped objective.

Sample Factory (Petrenko et al. 2020, section 3.4): the data of one batch was
collected by several policy versions, so the critic's targets and the policy
gradient's advantages are V-trace's (IMPALA, Espeholt et al. 2018, section
4), computed with the current critic, and the policy loss is PPO's clipped
surrogate with the ratio to the policy that acted.  Math only: the trainer
hosts it, the losses are :mod:`habitat_ver.algo`'s.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, Tuple

import torch
from habitat_baselines.rl.models.rnn_state_encoder import (
    build_pack_info_from_dones,
    build_rnn_build_seq_info,
)
from torch import Tensor

from habitat_ver.algo.ppo_loss import approx_kl, clipped_surrogate_loss, value_loss
from habitat_ver.algo.vtrace import vtrace


@dataclass
class AppoLearnerSettings:
    """What the learner needs from ``rl.ppo`` and ``rl.appo``."""

    clip_eps: float  # habitat's rl.ppo.clip_param
    ppo_epoch: int
    num_mini_batch: int  # minibatches of whole trajectories per epoch
    value_loss_coef: float
    entropy_coef: float
    max_grad_norm: float
    gamma: float
    vtrace_rho_clip: float
    vtrace_c_clip: float
    normalize_advantage: bool


class AppoLearner:
    """PPO epochs on one batch of trajectories (see the module docstring).

    Args:
        policy: habitat ``NetPolicy`` being trained.
        optimizer: its optimiser.
        settings: loss and optimisation settings.
        device: where the policy lives.
        obs_transform: applied to observation batches before the policy.
    """

    def __init__(
        self,
        policy: Any,
        optimizer: torch.optim.Optimizer,
        settings: AppoLearnerSettings,
        device: torch.device,
        obs_transform: Callable[[Dict[str, Tensor]], Dict[str, Tensor]] = lambda b: b,
    ):
        self.policy, self.optimizer = policy, optimizer
        self.settings, self.device, self._transform = settings, device, obs_transform

    def _evaluate(self, batch: Dict[str, Any], mb: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """Values ``[T+1, b, 1]``, log-probs and entropies ``[T, b, 1]`` of the
        trajectories ``mb``, all ``T + 1`` steps in one (packed) forward."""
        T1, b = batch["masks"].shape[0], len(mb)

        def flat(x: Tensor) -> Tensor:
            return x[:, mb].flatten(0, 1).to(self.device)

        observations = self._transform({k: flat(v) for k, v in batch["observations"].items()})
        dones = torch.logical_not(batch["masks"][:, mb, 0]).numpy()
        seq_info = build_rnn_build_seq_info(self.device, build_pack_info_from_dones(dones))
        values, log_probs, entropy, _, _ = self.policy.evaluate_actions(
            observations,
            batch["hidden"][mb].to(self.device),
            flat(batch["prev_actions"]),
            flat(batch["masks"]),
            flat(batch["actions"]),
            seq_info,
        )
        return (
            values.float().view(T1, b, 1),
            log_probs.view(T1, b, 1)[:-1],
            entropy.view(T1, b, -1)[:-1],
        )

    def _losses(self, batch: Dict[str, Any], mb: Tensor) -> Dict[str, Tensor]:
        s = self.settings
        values, log_probs, entropy = self._evaluate(batch, mb)
        behaviour = batch["behaviour_log_probs"][:, mb].to(self.device)
        cut = batch["truncated"][:, mb].to(self.device)
        # A cut's next observation is the next episode's first: the cut
        # step's own value stands in for the value after it (Sample Factory).
        truncation = dict(truncated=cut, truncation_values=values[:-1]) if bool(cut.any()) else {}
        targets = vtrace(
            behaviour,
            log_probs,
            batch["rewards"][:, mb].to(self.device),
            values[:-1],
            batch["dones"][:, mb].to(self.device),
            values[-1],
            s.gamma,
            s.vtrace_rho_clip,
            s.vtrace_c_clip,
            **truncation,
        )
        advantages = targets.pg_advantages
        if s.normalize_advantage:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-5)
        policy = clipped_surrogate_loss(log_probs, behaviour, advantages, s.clip_eps)
        critic = value_loss(values[:-1], targets.vs)
        mean_entropy = entropy.mean()
        total = policy.loss + s.value_loss_coef * critic - s.entropy_coef * mean_entropy
        return {
            "loss/total": total,
            "loss/policy": policy.loss,
            "loss/value": critic,
            "loss/entropy": mean_entropy,
            "diag/clip_fraction": policy.clip_fraction,
            "diag/approx_kl": approx_kl(log_probs.detach(), behaviour),
            "diag/vtrace_rho_mean": targets.clipped_rhos.mean(),
        }

    def learn(self, batch: Dict[str, Any]) -> Dict[str, float]:
        """``ppo_epoch`` passes over ``batch`` (from
        :meth:`~habitat_ver.system.appo_buffers.TrajectoryBuffers.batch`).

        Returns:
            The losses and diagnostics of the last epoch, averaged over its
            minibatches, plus ``grad_norm``.
        """
        s = self.settings
        num_trajectories = batch["masks"].shape[1]
        self.policy.train()
        for epoch in range(s.ppo_epoch):
            last = epoch == s.ppo_epoch - 1
            sums: Dict[str, float] = {}
            minibatches = torch.randperm(num_trajectories).chunk(s.num_mini_batch)
            for mb in minibatches:
                losses = self._losses(batch, mb)
                self.optimizer.zero_grad(set_to_none=True)
                losses["loss/total"].backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(
                    self.policy.parameters(), s.max_grad_norm
                )
                self.optimizer.step()
                if last:
                    losses["grad_norm"] = grad_norm
                    for k, v in losses.items():
                        sums[k] = sums.get(k, 0.0) + float(v.detach()) / len(minibatches)
        self.policy.eval()
        return sums
