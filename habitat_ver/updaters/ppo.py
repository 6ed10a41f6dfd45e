"""PPO updater whose losses come from :mod:`habitat_ver.algo.ppo_loss`.

The one PPO update loop of every trainer (``ddppo``, ``ver``, ``appo``):
:meth:`PPOUpdater.update` runs the epochs over ``rollouts.data_generator``
minibatches; each minibatch is evaluated, gets its advantages and returns
from the updater's targets step (:mod:`habitat_ver.updaters.targets`: the
return estimator named by ``habitat_baselines.returns.estimator``; GAE over
the rollout, or V-trace on the current values for ``appo``), and goes
through the same losses, optimiser step and metrics.  Upstream's
``PPO._update_from_batch`` computes the losses, steps the optimiser and
records metrics in one method with no hook between them, so that method is
overridden here and split into named hooks:
:meth:`PPOUpdater._sample_weights_and_mask`,
:meth:`PPOUpdater._compute_losses`, :meth:`PPOUpdater._value_loss`,
:meth:`PPOUpdater._total_loss` and :meth:`PPOUpdater._record_metrics`.
``from_config``, the optimiser, advantage normalisation and gradient clipping
in ``before_step`` are upstream's, inherited unchanged.

Entropy: ``rl.ppo.entropy_coef`` is a fixed coefficient by default
(:class:`~habitat_ver.updaters.entropy.FixedEntropyCoefficient`). With
``rl.ppo.use_adaptive_entropy_pen`` it is instead the initial value of a
learned coefficient (:class:`~habitat_ver.updaters.entropy.LearnedEntropyCoefficient`,
VER paper section 4) with target entropy ``-rl.ppo.entropy_target_factor *
action dimensions`` — for Gaussian, categorical and mixed policies alike
(upstream's ``PPO.__init__`` builds its coefficient only when the policy has
a ``num_actions`` attribute and a ``gaussian`` distribution, and silently
keeps the fixed one otherwise). The learned coefficient has its own Adam
step after the policy's, is saved in the resume state
(``entropy_coef_state``) and logged as ``learner/entropy_coef``.

Metric keys are the project's log vocabulary (:mod:`habitat_ver.common.log_keys`):
``learner/...`` for the learning quantities, ``system/...`` for the data's
staleness.
"""

import collections
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import torch
from habitat_baselines.rl.ppo.ppo import PPO
from habitat_baselines.utils.common import inference_mode
from habitat_baselines.utils.timing import g_timer
from torch import Tensor

from habitat_ver.algo.ppo_loss import (
    approx_kl,
    clipped_surrogate_loss,
    gated_clipped_value_loss,
    masked_mean,
    normalised_mean,
    value_loss,
)
from habitat_ver.algo.entropy_coef import entropy_target
from habitat_ver.updaters.entropy import (
    EntropyCoefficient,
    FixedEntropyCoefficient,
    LearnedEntropyCoefficient,
    action_dims,
)
from habitat_ver.updaters.gae_targets import GAETargets
from habitat_ver.updaters.targets import TargetsStep

__all__ = ["PPOLosses", "PPOUpdater", "action_dims"]

LearnerMetrics = Dict[str, List[Any]]

# Resume-state key of the learned entropy coefficient.
ENTROPY_COEF_STATE_KEY = "entropy_coef_state"


class PPOLosses(NamedTuple):
    """The per-minibatch quantities :meth:`PPOUpdater._compute_losses` makes.

    Attributes:
        policy: clipped surrogate loss (scalar, differentiable).
        value: critic loss before ``value_loss_coef`` (scalar, differentiable).
        entropy: the entropy bonus' ``H`` (scalar, differentiable): the mean
            of the entropy times VER's importance weights, like the other terms.
        measured_entropy: the policy's mean entropy, weighted and normalised
            by the weights' sum (scalar, detached); what the learned
            coefficient's constraint compares and the log reports.
        clip_fraction: fraction of clipped ratios (scalar, detached).
        approx_kl: ``KL(behaviour || current)`` estimate (scalar, detached).
        ratio: probability ratios of the valid samples (detached).
        values: critic predictions of the valid samples, as float (detached).
    """

    policy: Tensor
    value: Tensor
    entropy: Tensor
    measured_entropy: Tensor
    clip_fraction: Tensor
    approx_kl: Tensor
    ratio: Tensor
    values: Tensor


# How update() reduces a metric over minibatches, by the last part of its name.
_REDUCE = {"min": torch.min, "max": torch.max}


def _stacked(values: List[Any]) -> Tensor:
    return torch.stack([torch.as_tensor(v, dtype=torch.float32) for v in values])


class PPOUpdater(PPO):
    """habitat's ``PPO`` with its loss arithmetic moved into ``algo``.

    Same constructor and ``from_config(actor_critic, config)`` as upstream;
    :meth:`use_targets` swaps the targets step (GAE with habitat's default
    ``rl.ppo`` keys until the trainer sets the run's estimator).
    ``update(rollouts)`` returns, averaged over every minibatch of every
    epoch (clip fraction and KL: of the last epoch, when the policy has moved
    furthest from the behaviour one):

    * ``learner/loss/policy``, ``learner/loss/value`` (before
      ``value_loss_coef``), ``learner/loss/entropy`` (the policy's mean entropy,
      importance-weighted and normalised, unscaled), ``learner/loss/total``;
    * ``learner/clip_fraction``, ``learner/approx_kl``, ``learner/grad_norm``,
      ``learner/entropy_coef`` (fixed or learned),
      ``learner/value_pred/{min,mean,max}``, ``learner/prob_ratio/{min,mean,max}``;
    * where the data has them: ``learner/is_weight/{min,mean,max}`` (VER's
      importance weights), ``learner/aux/<loss>/<key>``, the targets step's
      diagnostics, ``system/stale_fraction`` and ``system/policy_lag/{min,mean,max}``.
    """

    # Replaces upstream's Lagrange coefficient, which is not a base of ours;
    # every upstream method that reads it (update, after_step) is overridden.
    entropy_coef: EntropyCoefficient  # type: ignore[assignment]

    def __init__(
        self,
        actor_critic: Any,
        clip_param: float,
        ppo_epoch: int,
        num_mini_batch: int,
        value_loss_coef: float,
        entropy_coef: float,
        lr: Optional[float] = None,
        eps: Optional[float] = None,
        max_grad_norm: Optional[float] = None,
        use_clipped_value_loss: bool = False,
        use_normalized_advantage: bool = True,
        entropy_target_factor: float = 0.0,
        use_adaptive_entropy_pen: bool = False,
    ) -> None:
        """Upstream's signature; the learned coefficient is ours (see module doc)."""
        super().__init__(
            actor_critic,
            clip_param,
            ppo_epoch,
            num_mini_batch,
            value_loss_coef,
            entropy_coef,
            lr,
            eps,
            max_grad_norm,
            use_clipped_value_loss,
            use_normalized_advantage,
            entropy_target_factor,
            use_adaptive_entropy_pen=False,  # never upstream's Gaussian-only one
        )
        self.entropy_coef = FixedEntropyCoefficient(entropy_coef)
        if use_adaptive_entropy_pen:
            self._init_learned_entropy_coef(
                float(entropy_coef), float(entropy_target_factor), lr, eps
            )
        self.targets: TargetsStep = GAETargets()
        # Modules with parameters kept in bounds after each step (GaussianHead's
        # std parameter), found once.
        self._bounded_modules = [
            m for m in actor_critic.modules() if hasattr(m, "project_into_bounds_")
        ]

    @classmethod
    def from_config(cls, actor_critic: Any, config: Any) -> Any:
        """Upstream's, from the ``rl.ppo`` section; the targets step is GAE
        with that section's ``gamma``, ``tau`` and ``use_gae``."""
        updater = super().from_config(actor_critic, config)
        updater.use_targets(GAETargets.from_ppo_config(config))
        return updater

    def use_targets(self, targets: TargetsStep) -> None:
        """Where minibatches get their advantages and returns from."""
        self.targets = targets

    def update(self, rollouts: Any) -> Dict[str, float]:
        """``ppo_epoch`` passes over ``rollouts.data_generator``'s minibatches.

        Upstream's loop, with the targets step's two entry points.

        Returns:
            Each metric over the minibatches it was recorded on: the smallest
            of a ``.../min``, the largest of a ``.../max`` (so that they are
            the update's extremes, as named), the mean of the others.
        """
        advantages = self.targets.before_epochs(self, rollouts)
        learner_metrics: LearnerMetrics = collections.defaultdict(list)
        for epoch in range(self.ppo_epoch):
            for batch in rollouts.data_generator(advantages, self.num_mini_batch):
                self._update_from_batch(batch, epoch, rollouts, learner_metrics)
        self._set_grads_to_none()
        with inference_mode():
            return {
                k: float(_REDUCE.get(k.rsplit("/", 1)[-1], torch.mean)(_stacked(vs)))
                for k, vs in learner_metrics.items()
            }

    def _init_learned_entropy_coef(
        self,
        init_alpha: float,
        target_factor: float,
        lr: Optional[float],
        eps: Optional[float],
    ) -> None:
        """Replaces the fixed coefficient by a learned one (after the policy's
        optimiser exists, so ``log_alpha`` stays out of it)."""
        target = entropy_target(target_factor, action_dims(self.actor_critic.policy_action_space))
        learned = LearnedEntropyCoefficient(
            target=target,
            init_alpha=init_alpha,
            lr=2.5e-4 if lr is None else lr,
            eps=1e-5 if eps is None else eps,
        ).to(self.device)
        self.entropy_coef = learned
        # Upstream's before_step averages non-actor-critic gradients across
        # ranks; listing log_alpha there keeps alpha equal on every rank.
        self.non_ac_params.append(learned.log_alpha)

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
        values, action_log_probs, dist_entropy = self.targets.on_minibatch(
            batch, values.float(), action_log_probs, dist_entropy
        )
        losses = self._compute_losses(batch, values, action_log_probs, dist_entropy)
        total_loss = self._total_loss(losses, aux_loss_res)

        total_loss = self.before_backward(total_loss)
        total_loss.backward()
        self.after_backward(total_loss)
        grad_norm = self.before_step()
        self.optimizer.step()
        self.after_step()

        with inference_mode():
            self._record_metrics(
                batch,
                epoch,
                rollouts,
                learner_metrics,
                losses,
                total_loss,
                grad_norm,
                aux_loss_res,
            )

    def _sample_weights_and_mask(
        self, batch: Dict[str, Any]
    ) -> Tuple[Optional[Tensor], Optional[Tensor]]:
        """Per-sample loss weights and validity mask of a minibatch.

        Weights are VER's importance coefficients (upstream's ``is_coeffs``
        key), already truncated by the storage at its ``is_coeff_cap``; the
        mask is habitat's ``loss_mask`` key (0/1, as written by upstream's
        HRL storage). Either is None when absent.

        Shapes:
            both: ``[B, 1]`` or None.
        """
        weights = batch.get("is_coeffs")
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
            measured_entropy=normalised_mean(dist_entropy.detach(), mask, weights),
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

    def _total_loss(self, losses: PPOLosses, aux_loss_res: Dict[str, Dict[str, Tensor]]) -> Tensor:
        """Weighted sum of the terms, summed in upstream's order."""
        all_losses = [self.value_loss_coef * losses.value, losses.policy]
        # Fixed: -coef * H. Learned: alpha * ([H]_sg - target) - [alpha]_sg * H,
        # whose first term only moves log_alpha (stepped in after_step).
        all_losses.append(self.entropy_coef.loss(losses.entropy, losses.measured_entropy))
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
            for name, op in (("min", torch.min), ("mean", torch.mean), ("max", torch.max)):
                learner_metrics[f"{prefix}/{name}"].append(op(t))

        m = learner_metrics
        if "is_coeffs" in batch:
            record_min_mean_max(batch["is_coeffs"], "learner/is_weight")
        record_min_mean_max(losses.values, "learner/value_pred")
        record_min_mean_max(losses.ratio, "learner/prob_ratio")
        m["learner/loss/policy"].append(losses.policy)
        m["learner/loss/value"].append(losses.value)
        m["learner/loss/entropy"].append(losses.measured_entropy)
        m["learner/loss/total"].append(total_loss)
        if epoch == self.ppo_epoch - 1:
            m["learner/clip_fraction"].append(losses.clip_fraction)
            m["learner/approx_kl"].append(losses.approx_kl)
        m["learner/grad_norm"].append(grad_norm)
        m["learner/entropy_coef"].append(self.entropy_coef.value())
        for name, res in aux_loss_res.items():
            for k, v in res.items():
                m[f"learner/aux/{name}/{k}"].append(v.detach())
        for k, v in self.targets.metrics(batch).items():
            m[k].append(v)
        if "is_stale" in batch:
            m["system/stale_fraction"].append(batch["is_stale"].float().mean())
        if "policy_version" in batch:
            # Storages that stamp each step with the policy version that
            # acted (VER's) get the lag reported (upstream's
            # policy_version_difference).
            record_min_mean_max(
                (rollouts.current_policy_version - batch["policy_version"]).float(),
                "system/policy_lag",
            )

    def after_step(self) -> None:
        """Keeps bounded parameters in bounds and steps the learned entropy
        coefficient, after the policy's step."""
        super().after_step()
        for module in self._bounded_modules:
            module.project_into_bounds_()
        self.entropy_coef.step()

    def get_resume_state(self) -> Dict[str, Any]:
        """Upstream's optimiser state plus the learned coefficient's state."""
        state = super().get_resume_state()
        coef_state = self.entropy_coef.get_state()
        if coef_state:  # a fixed coefficient has none
            state[ENTROPY_COEF_STATE_KEY] = coef_state
        return state

    # Upstream's Updater contract; upstream's PPO already clashes with
    # nn.Module.load_state_dict, which it also inherits.
    def load_state_dict(self, state: Dict[str, Any]) -> None:  # type: ignore[override]
        """Upstream's contract (optimiser state) plus the learned coefficient."""
        super().load_state_dict(state)
        if ENTROPY_COEF_STATE_KEY in state:
            self.entropy_coef.set_state(state[ENTROPY_COEF_STATE_KEY])
