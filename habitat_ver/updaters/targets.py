"""The targets step of the PPO updater: where advantages and returns come from.

:class:`~habitat_ver.updaters.ppo.PPOUpdater` runs one loop for every trainer
(epochs, minibatches, losses, optimiser, metrics); the only part that differs
is how a minibatch gets its ``advantages`` and ``returns``, a
:class:`TargetsStep` chosen by name with ``habitat_baselines.returns.estimator``
(a *return estimator*):

* ``gae`` (:class:`~habitat_ver.updaters.gae_targets.GAETargets`; needs
  ``rollout_steps``: ``ddppo``, ``ver``): a :class:`RolloutTargets`: before the
  epochs it reads the rollout's steps from the storage (``return_steps``),
  computes the returns and writes them back (``store_returns``); the
  advantages are ``returns - value_preds``, normalised once over the whole
  rollout (upstream's ``PPO.get_advantages``), and minibatches are used as
  stored.
* ``vtrace`` (:class:`~habitat_ver.updaters.vtrace_targets.VTraceTargets`;
  needs ``off_policy_trajectories``: ``appo``): recomputed on every minibatch
  from the current critic and policy.

This is the only code that computes returns of our storages.  An updater
without a targets step (upstream's ``PPO``, ``HRLPPO``) reads them from the
storage: the trainer then hands the storage the run's :class:`RolloutTargets`,
and the storage's ``compute_returns`` (upstream's contract, which upstream's
loop calls before the update) runs it
(:class:`~habitat_ver.storage.return_steps.StepsForReturns`).

``auto`` (the default) is the first registered estimator whose needs the
trainer provides (its ``PROVIDES``; :mod:`habitat_ver.common.capabilities`).
A new estimator is a class in a file of its own -- usually a
:class:`RolloutTargets` with one method, :meth:`RolloutTargets.returns` --
plus one :func:`register_return_estimator` call in
:mod:`habitat_ver.registration`; trainers find it there, and
:func:`check_return_estimator` (a settings check that config validation runs)
checks the chosen name.
"""

from dataclasses import dataclass
from typing import AbstractSet, Any, Callable, Dict, Iterable, Optional, Tuple

from torch import Tensor

from habitat_ver.algo.sequence_grid import from_end_aligned_grid, to_end_aligned_grid
from habitat_ver.common.checks import AUTO
from habitat_ver.common.kind_registry import KindRegistry
from habitat_ver.config.errors import check
from habitat_ver.config.honoured_keys import trainer_kind, trainer_provides
from habitat_ver.config.schema import section_or_default
from habitat_ver.storage.return_steps import RolloutSteps

__all__ = [
    "ReturnsConfig",
    "RolloutTargets",
    "TargetsStep",
    "build_return_estimator",
    "check_return_estimator",
    "register_return_estimator",
    "resolve_return_estimator",
    "return_estimator_names",
]


@dataclass
class ReturnsConfig:
    """``habitat_baselines.returns`` (a settings section, registered in
    :mod:`habitat_ver.registration`): where PPO's advantages and returns come
    from (the updater's targets step)."""

    # "auto" (ddppo, ver: gae; appo: vtrace), "gae" (rl.ppo.gamma, tau, use_gae),
    # "vtrace" (rl.appo.vtrace_*), or any estimator registered in habitat_ver.updaters.targets.
    estimator: str = AUTO


# (values, action_log_probs, dist_entropy) of the steps the losses are taken on.
Evaluated = Tuple[Tensor, Tensor, Tensor]


class TargetsStep:
    """Interface: the two points where a targets step enters the update loop."""

    def before_epochs(self, updater: Any, rollouts: Any) -> Optional[Tensor]:
        """Advantages handed to ``rollouts.data_generator`` (None: per minibatch)."""
        raise NotImplementedError

    def on_minibatch(
        self, batch: Dict[str, Any], values: Tensor, log_probs: Tensor, entropy: Tensor
    ) -> Evaluated:
        """Fills ``batch["advantages"]`` and ``batch["returns"]`` if needed.

        Args:
            batch: the minibatch from ``data_generator`` (may be written).
            values, log_probs, entropy: the policy's ``evaluate_actions``
                outputs on the minibatch's observations.

        Returns:
            ``(values, log_probs, entropy)`` of the steps the losses use,
            aligned with ``batch["action_log_probs"]``.
        """
        raise NotImplementedError

    def metrics(self, batch: Dict[str, Any]) -> Dict[str, Tensor]:
        """Diagnostics of this step for the minibatch (``learner/...`` keys)."""
        return {}


class RolloutTargets(TargetsStep):
    """Returns computed once over the whole rollout, before the epochs.

    A subclass implements :meth:`returns` on time-major steps; VER's
    variable-length sequences reach it through :meth:`sequence_returns`,
    which pads them into an end-aligned grid (right for any estimator whose
    return at a step depends only on that step and later ones).
    """

    # Whether upstream's own storages (``RolloutStorage``: no
    # ``return_steps``) compute these returns themselves in ``compute_returns``;
    # then they are used as stored.
    upstream_storages_compute_these: bool = False

    def returns(self, steps: RolloutSteps) -> Tensor:
        """The returns of time-major steps (``steps.lengths`` is None).

        Shapes:
            steps: ``[T, K, 1]`` tensors, bootstrap ``[K, 1]``; returns ``[T, K, 1]``.
        """
        raise NotImplementedError

    def sequence_returns(self, steps: RolloutSteps) -> Tensor:
        """The returns of back-to-back sequences (``steps.lengths`` set):
        :meth:`returns` on the end-aligned grid (padding: reward 0, value 0,
        not done, not cut), the padding dropped.

        Shapes:
            steps: ``[S, 1]`` tensors, bootstrap ``[K, 1]``; returns ``[S, 1]``.

        Raises:
            ValueError: ``lengths`` is not a non-empty 1-D tensor of positive
                lengths, or the steps do not have ``sum(lengths)`` rows.
        """
        lengths = steps.lengths
        assert lengths is not None, "time-major steps go to returns()"
        _check_sequences(steps, lengths)
        cut = steps.truncated
        grid = RolloutSteps(
            to_end_aligned_grid(steps.rewards, lengths, 0.0),
            to_end_aligned_grid(steps.values, lengths, 0.0),
            to_end_aligned_grid(steps.dones, lengths, False),
            steps.bootstrap_values,
            truncated=None if cut is None else to_end_aligned_grid(cut, lengths, False),
            truncation_values=(
                None
                if steps.truncation_values is None
                else to_end_aligned_grid(steps.truncation_values, lengths, 0.0)
            ),
        )
        return from_end_aligned_grid(self.returns(grid), lengths)

    def fill_returns(self, rollouts: Any) -> None:
        """Computes the returns of ``rollouts``' steps and stores them there.

        Raises:
            TypeError: the storage does not lay out its steps (no ``return_steps``).
        """
        if not hasattr(rollouts, "return_steps"):
            raise TypeError(
                f"{type(rollouts).__name__} does not lay out its steps for a return "
                "estimator (no return_steps); use LockstepRolloutStorage or VERStorage"
            )
        steps = rollouts.return_steps()
        if steps.lengths is None:
            rollouts.store_returns(self.returns(steps))
        else:
            rollouts.store_returns(self.sequence_returns(steps))

    def before_epochs(self, updater: Any, rollouts: Any) -> Optional[Tensor]:
        if hasattr(rollouts, "return_steps") or not self.upstream_storages_compute_these:
            self.fill_returns(rollouts)
        advantages: Tensor = updater.get_advantages(rollouts)
        return advantages

    def on_minibatch(
        self, batch: Dict[str, Any], values: Tensor, log_probs: Tensor, entropy: Tensor
    ) -> Evaluated:
        return values, log_probs, entropy


def _check_sequences(steps: RolloutSteps, lengths: Tensor) -> None:
    """Raises ValueError unless ``lengths`` cut ``steps`` into sequences."""
    if lengths.dim() != 1 or lengths.shape[0] == 0 or bool((lengths < 1).any()):
        raise ValueError(
            f"lengths must be a non-empty 1-D tensor of positive lengths; got {lengths.tolist()}"
        )
    if int(lengths.sum()) != steps.rewards.shape[0] or steps.values.shape != steps.rewards.shape:
        raise ValueError(
            f"rewards {tuple(steps.rewards.shape)} and values "
            f"{tuple(steps.values.shape)} must have sum(lengths) = "
            f"{int(lengths.sum())} rows and equal shapes"
        )


# ------------------------------------------------------------------ registry
EstimatorBuilder = Callable[[Any], TargetsStep]


_ESTIMATORS: KindRegistry[EstimatorBuilder] = KindRegistry("return estimator")


def register_return_estimator(
    name: str, build: EstimatorBuilder, needs: Iterable[str] = ()
) -> None:
    """Make ``habitat_baselines.returns.estimator=<name>`` build a targets step.

    Args:
        name: the estimator's name (``auto`` is reserved: each trainer's default).
        build: full config -> targets step, e.g. the class's ``from_config``.
        needs: the capabilities a trainer must provide (its ``PROVIDES``;
            :mod:`habitat_ver.common.capabilities`) for the estimator to
            read its storage.

    Raises:
        ValueError: ``name`` is ``auto`` or already registered to another builder.
    """
    _ESTIMATORS.register(name, build, needs)


def unregister_return_estimator(name: str) -> None:
    """Drop a registered estimator (tests registering a toy one clean up with it)."""
    _ESTIMATORS.unregister(name)


def return_estimator_names(provides: Optional[AbstractSet[str]] = None) -> Tuple[str, ...]:
    """Registered names, in registration order; with ``provides`` (a
    trainer's ``PROVIDES``), only those that trainer can run."""
    return _ESTIMATORS.names(provides)


def resolve_return_estimator(chosen: str, provides: AbstractSet[str]) -> str:
    """``chosen`` with ``auto`` read as the first estimator a trainer that
    provides ``provides`` can run.

    Raises:
        KeyError: ``auto`` where ``provides`` covers no estimator.
    """
    return _ESTIMATORS.resolve(chosen, provides)


def build_return_estimator(name: str, config: Any) -> TargetsStep:
    """The targets step registered as ``name``, built from the run's config.

    Raises:
        KeyError: no estimator of that name (the message lists the registered ones).
    """
    return _ESTIMATORS.builder(name)(config)


def check_return_estimator(config: Any) -> None:
    """``habitat_baselines.returns.estimator``: ``auto`` or an estimator
    whose needs this trainer provides (a trainer that can run none, such as
    upstream's, does not read the key)."""
    kind = trainer_kind(config)
    provides = trainer_provides(config)
    if not return_estimator_names(provides):
        return
    chosen = section_or_default(config, "returns", ReturnsConfig).estimator
    allowed = (AUTO,) + return_estimator_names(provides)
    check(
        chosen in allowed,
        "habitat_baselines.returns.estimator",
        chosen,
        f"one of {allowed} for trainer {kind!r}",
    )
