"""PPO updater whose losses come from :mod:`habitat_ver.algo.ppo_loss`.

Upstream's ``PPO._update_from_batch`` computes the losses, steps the optimiser
and records metrics in one method with no hook between them, so that one
method is overridden here (the smallest override upstream allows) and split
into named hooks: :meth:`PPOUpdater._sample_weights_and_mask`,
:meth:`PPOUpdater._compute_losses`, :meth:`PPOUpdater._value_loss`,
:meth:`PPOUpdater._total_loss` and :meth:`PPOUpdater._record_metrics`.
Everything else (``from_config``, the optimiser, advantage normalisation,
epochs and minibatches, gradient clipping in ``before_step``, the learned
entropy coefficient, resume state) is upstream's, inherited unchanged.
"""

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import torch
from habitat_baselines.rl.ppo.ppo import PPO
from habitat_baselines.utils.common import (
    LagrangeInequalityCoefficient,
    inference_mode,
)
from habitat_baselines.utils.timing import g_timer
from torch import Tensor

from habitat_ver.algo.ppo_loss import (
    approx_kl,
    clipped_surrogate_loss,
    gated_clipped_value_loss,
    masked_mean,
    value_loss,
)

__all__ = ["PPOLosses", "PPOUpdater"]

LearnerMetrics = Dict[str, List[Any]]


class PPOLosses(NamedTuple):
    """The per-minibatch quantities :meth:`PPOUpdater._compute_losses` makes.

    Attributes:
        policy: clipped surrogate loss (scalar, differentiable).
        value: critic loss before ``value_loss_coef`` (scalar, differentiable).
        entropy: mean policy entropy ``H`` (scalar, differentiable).
        clip_fraction: fraction of clipped ratios (scalar, detached).
        approx_kl: ``KL(behaviour || current)`` estimate (scalar, detached).
        ratio: probability ratios of the valid samples (detached).
        values: critic predictions of the valid samples, as float (detached).
    """

    policy: Tensor
    value: Tensor
    entropy: Tensor
    clip_fraction: Tensor
    approx_kl: Tensor
    ratio: Tensor
    values: Tensor


class PPOUpdater(PPO):
    """habitat's ``PPO`` with its loss arithmetic moved into ``algo``.

    Same constructor and ``from_config(actor_critic, config)`` as upstream.
    ``update(rollouts)`` returns every key upstream returns (``value_loss``,
    ``action_loss``, ``dist_entropy``, ``ppo_fraction_clipped``,
    ``grad_norm``, ``value_pred_*``, ``prob_ratio_*``, ...) plus:

    * ``loss/policy``, ``loss/value`` (before ``value_loss_coef``),
      ``loss/entropy`` (mean entropy ``H``, unscaled) and ``loss/total``;
    * ``diag/clip_fraction`` and ``diag/approx_kl``, measured in the last
      PPO epoch, when the policy has moved furthest from the behaviour one.
    """

    @g_timer.avg_time("ppo.update_from_batch", level=1)
    def _update_from_batch(
        self,
        batch: Dict[str, Any],
        epoch: int,
        rollouts: Any,
        learner_metrics: LearnerMetrics,
    ) -> None:
        """One gradient step on one minibatch (upstream's contract)."""
        self._set_grads_to_none()
        (
            values,
            action_log_probs,
            dist_entropy,
            _,
            aux_loss_res,
        ) = self._evaluate_actions(
            batch["observations"],
            batch["recurrent_hidden_states"],
            batch["prev_actions"],
            batch["masks"],
            batch["actions"],
            batch.get("rnn_build_seq_info", None),
        )
        losses = self._compute_losses(
            batch, values.float(), action_log_probs, dist_entropy
        )
        total_loss = self._total_loss(losses, aux_loss_res)

        total_loss = self.before_backward(total_loss)
        total_loss.backward()
        self.after_backward(total_loss)
        grad_norm = self.before_step()
        self.optimizer.step()
        self.after_step()

        with inference_mode():
            self._record_metrics(
                batch, epoch, rollouts, learner_metrics, losses,
                total_loss, grad_norm, aux_loss_res,
            )

    def _sample_weights_and_mask(
        self, batch: Dict[str, Any]
    ) -> Tuple[Optional[Tensor], Optional[Tensor]]:
        """Per-sample loss weights and validity mask of a minibatch.

        Weights are VER's importance coefficients truncated at 1 (upstream's
        ``is_coeffs`` key); the mask is habitat's ``loss_mask`` key (0/1, as
        written by upstream's HRL storage). Either is None when absent.

        Shapes:
            both: ``[B, 1]`` or None.
        """
        weights = batch.get("is_coeffs")
        if weights is not None:
            weights = weights.clamp(max=1.0)
        mask = batch.get("loss_mask")
        if mask is not None:
            mask = mask.bool()
        return weights, mask

    def _compute_losses(
        self,
        batch: Dict[str, Any],
        values: Tensor,
        action_log_probs: Tensor,
        dist_entropy: Tensor,
    ) -> PPOLosses:
        """Policy, value and entropy terms of one minibatch.

        Shapes:
            values, action_log_probs, dist_entropy: ``[B, 1]``
        """
        weights, mask = self._sample_weights_and_mask(batch)
        policy = clipped_surrogate_loss(
            action_log_probs,
            batch["action_log_probs"],
            batch["advantages"],
            clip_eps=self.clip_param,  # habitat's `clip_param`
            weights=weights,
            mask=mask,
        )
        with torch.no_grad():
            kl = approx_kl(action_log_probs, batch["action_log_probs"], mask)
        valid = (lambda t: t) if mask is None else (lambda t: t[mask])
        return PPOLosses(
            policy=policy.loss,
            value=self._value_loss(batch, values, weights, mask),
            entropy=masked_mean(dist_entropy, mask, weights),
            clip_fraction=policy.clip_fraction,
            approx_kl=kl,
            ratio=valid(policy.ratio),
            values=valid(values.detach()),
        )

    def _value_loss(
        self,
        batch: Dict[str, Any],
        values: Tensor,
        weights: Optional[Tensor],
        mask: Optional[Tensor],
    ) -> Tensor:
        """Critic loss; ``use_clipped_value_loss`` keeps habitat 0.3's form.

        habitat-baselines 0.3 clips by gating (see
        :func:`habitat_ver.algo.ppo_loss.gated_clipped_value_loss`), not by
        the max of clipped and unclipped errors; a subclass can return
        :func:`~habitat_ver.algo.ppo_loss.clipped_value_loss` instead.
        """
        if self.use_clipped_value_loss:
            return gated_clipped_value_loss(
                values,
                batch["value_preds"],
                batch["returns"],
                clip_eps=self.clip_param,
                weights=weights,
                mask=mask,
            )
        return value_loss(values, batch["returns"], weights, mask)

    def _total_loss(
        self, losses: PPOLosses, aux_loss_res: Dict[str, Dict[str, Tensor]]
    ) -> Tensor:
        """Weighted sum of the terms, summed in upstream's order."""
        all_losses = [self.value_loss_coef * losses.value, losses.policy]
        if isinstance(self.entropy_coef, float):
            all_losses.append(-self.entropy_coef * losses.entropy)
        else:
            # Learned coefficient: alpha * (target - [H]_sg) - [alpha]_sg * H.
            all_losses.append(self.entropy_coef.lagrangian_loss(losses.entropy))
        all_losses.extend(v["loss"] for v in aux_loss_res.values())
        return torch.stack(all_losses).sum()

    def _record_metrics(
        self,
        batch: Dict[str, Any],
        epoch: int,
        rollouts: Any,
        learner_metrics: LearnerMetrics,
        losses: PPOLosses,
        total_loss: Tensor,
        grad_norm: Tensor,
        aux_loss_res: Dict[str, Dict[str, Tensor]],
    ) -> None:
        """Appends this minibatch's metrics; ``update`` averages them."""

        def record_min_mean_max(t: Tensor, prefix: str) -> None:
            for name, op in (("min", torch.min), ("mean", torch.mean),
                             ("max", torch.max)):
                learner_metrics[f"{prefix}_{name}"].append(op(t))

        m = learner_metrics
        if "is_coeffs" in batch:
            record_min_mean_max(batch["is_coeffs"], "ver_is_coeffs")
        record_min_mean_max(losses.values, "value_pred")
        record_min_mean_max(losses.ratio, "prob_ratio")
        # Upstream's keys, kept so dashboards compare with upstream runs.
        m["value_loss"].append(losses.value)
        m["action_loss"].append(losses.policy)
        m["dist_entropy"].append(losses.entropy)
        m["loss/policy"].append(losses.policy)
        m["loss/value"].append(losses.value)
        m["loss/entropy"].append(losses.entropy)
        m["loss/total"].append(total_loss)
        if epoch == self.ppo_epoch - 1:
            m["ppo_fraction_clipped"].append(losses.clip_fraction)
            m["diag/clip_fraction"].append(losses.clip_fraction)
            m["diag/approx_kl"].append(losses.approx_kl)
        m["grad_norm"].append(grad_norm)
        if isinstance(self.entropy_coef, LagrangeInequalityCoefficient):
            m["entropy_coef"].append(self.entropy_coef().detach())
        for name, res in aux_loss_res.items():
            for k, v in res.items():
                m[f"aux_{name}_{k}"].append(v.detach())
        if "is_stale" in batch:
            m["fraction_stale"].append(batch["is_stale"].float().mean())
        if "policy_version" in batch:
            # Storages that stamp each step with the policy version that
            # acted (VER's) get the lag reported as upstream does.
            record_min_mean_max(
                (rollouts.current_policy_version - batch["policy_version"])
                .float(),
                "policy_version_difference",
            )
