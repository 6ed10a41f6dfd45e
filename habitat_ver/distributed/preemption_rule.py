"""How a multi-rank run cuts slow ranks' rollouts short: one interface, a registry.

A trainer holds one :class:`PreemptionRule`, built by name from
``habitat_baselines.distrib_preemption.policy`` (:func:`build_preemption_rule`),
and calls it at four points of every update ``u``:

1. :meth:`~PreemptionRule.start_rollout` before collecting rollout ``u``;
2. :meth:`~PreemptionRule.should_stop` while collecting, after each batch of
   steps: True stops this rank (the trainer fills the rest of its batch from
   the previous rollout, which it keeps when the rule ``cuts_rollouts``);
3. :meth:`~PreemptionRule.end_rollout` once this rank's collection ended;
4. :meth:`~PreemptionRule.end_update` after learning ``u`` (every rank passed
   the gradient all-reduce); what it returns is logged with the update.

The rules: ``none`` (:class:`NoPreemption`), ``ddppo`` (DD-PPO's ``sync_frac``
rule, :class:`~habitat_ver.distributed.preemption.RolloutTracker`) and ``ver``
(VER's estimated optimum,
:class:`~habitat_ver.distributed.ver_tracker.VERPreemptionTracker`).  A new
rule is a class in a file of its own with a ``from_setup`` builder, plus one
:func:`register_preemption_rule` call in :mod:`habitat_ver.registration`;
trainers find it there by name, and :func:`check_preemption_policy` (a
settings check that config validation runs) checks the chosen name.
"""

from dataclasses import dataclass
from typing import AbstractSet, Any, Callable, Dict, Iterable, NamedTuple, Optional, Tuple

import torch.distributed as dist

from habitat_ver.common.checks import AUTO
from habitat_ver.common.kind_registry import KindRegistry
from habitat_ver.config.errors import ConfigError, check
from habitat_ver.config.honoured_keys import trainer_class

__all__ = [
    "DistribPreemptionConfig",
    "NoPreemption",
    "PreemptionRule",
    "PreemptionSetup",
    "RolloutEnd",
    "RolloutProgress",
    "build_preemption_rule",
    "check_preemption_policy",
    "preemption_rule_names",
    "register_preemption_rule",
]


@dataclass
class DistribPreemptionConfig:
    """``habitat_baselines.distrib_preemption`` (a settings section, registered in
    :mod:`habitat_ver.registration`): how a multi-rank run cuts the rollouts of
    slow ranks short."""

    # "auto" (ddppo: DD-PPO's sync_frac rule; ver: VER's estimated optimum),
    # "none" (every rank collects its whole rollout), "ddppo", "ver", or any
    # rule registered in habitat_ver.distributed.preemption_rule.
    policy: str = AUTO


@dataclass(frozen=True)
class PreemptionSetup:
    """What a rule may be built from (one rank's view of the run).

    Attributes:
        store: the process group's key-value store; None for a single rank.
        rank, world_size: this rank and the number of ranks.
        envs_per_rank: N, envs this rank steps.
        num_steps: T, the rollout length per env (``rl.ppo.num_steps``).
        sync_frac: fraction of ranks done that preempts the rest (``rl.ddppo.sync_frac``).
        short_rollout_fraction: never preempt before this fraction of the rollout.
    """

    store: Optional["dist.Store"]
    rank: int
    world_size: int
    envs_per_rank: int
    num_steps: int
    sync_frac: float
    short_rollout_fraction: float


class RolloutProgress(NamedTuple):
    """Where this rank's collection stands when a rule is asked to stop it.

    Attributes:
        new_steps: env steps collected since the previous question.
        collected: this rank's progress through its rollout, in the units of
            ``capacity`` (``ddppo``: steps per env; ``ver``: env steps).
        capacity: the full rollout in those units (``T``; ``ver``: ``T * N``).
    """

    new_steps: int
    collected: int
    capacity: int


class RolloutEnd(NamedTuple):
    """This rank's statistics of a finished collection.

    Attributes:
        steps: fresh env steps collected.
        step_time: mean seconds between two steps of one env (wall time of the
            collection x N / steps), inference included.
        learn_time: seconds the previous update's learning took (0 if none).
    """

    steps: int
    step_time: float
    learn_time: float


class PreemptionRule:
    """Interface: the four points where a preemption rule enters an update.

    Every method has a do-nothing default, so a rule implements only what it
    uses. ``update`` is the index of the update being collected or learnt.
    """

    # Whether the rule may stop a rank before its rollout is full (the
    # trainer then keeps the previous rollout to fill the batch from).
    cuts_rollouts: bool = True

    @classmethod
    def from_setup(cls, setup: PreemptionSetup) -> "PreemptionRule":
        """The rule for one rank of a run (the registry's default builder)."""
        raise NotImplementedError

    def start_rollout(self, update: int) -> None:
        """Collection of rollout ``update`` begins."""

    def should_stop(self, update: int, progress: RolloutProgress) -> bool:
        """True when this rank should stop collecting now."""
        return False

    def end_rollout(self, update: int, rollout: RolloutEnd) -> None:
        """This rank finished collecting rollout ``update``."""

    def end_update(self, update: int) -> Dict[str, float]:
        """Learning of ``update`` finished; returns values to log with it."""
        return {}

    def state(self) -> Dict[str, Any]:
        """What a resumed run needs back (saved in the resume state)."""
        return {}

    def restore(self, state: Dict[str, Any]) -> None:
        """Takes back what :meth:`state` returned before a restart."""


class NoPreemption(PreemptionRule):
    """``none``: every rank collects its whole rollout."""

    cuts_rollouts = False

    @classmethod
    def from_setup(cls, setup: PreemptionSetup) -> "NoPreemption":
        return cls()


RuleBuilder = Callable[[PreemptionSetup], PreemptionRule]


_RULES: KindRegistry[RuleBuilder] = KindRegistry("preemption rule")


def register_preemption_rule(name: str, build: RuleBuilder, needs: Iterable[str] = ()) -> None:
    """Make ``habitat_baselines.distrib_preemption.policy=<name>`` build a rule.

    Args:
        name: the policy name (``auto`` is reserved: each trainer's default).
        build: setup -> rule, e.g. the rule class's ``from_setup``.
        needs: the capabilities a trainer must provide (its ``PROVIDES``;
            :mod:`habitat_ver.common.capabilities`) to run the rule.

    Raises:
        ValueError: ``name`` is ``auto`` or already registered to another builder.
    """
    _RULES.register(name, build, needs)


def unregister_preemption_rule(name: str) -> None:
    """Drop a registered rule (tests registering a toy one clean up with it)."""
    _RULES.unregister(name)


def preemption_rule_names(provides: Optional[AbstractSet[str]] = None) -> Tuple[str, ...]:
    """Registered rule names, in registration order; with ``provides`` (a
    trainer's ``PROVIDES``), only those that trainer can run."""
    return _RULES.names(provides)


def build_preemption_rule(name: str, setup: PreemptionSetup) -> PreemptionRule:
    """The rule registered as ``name``, built for ``setup``.

    Raises:
        KeyError: no rule of that name (the message lists the registered ones).
    """
    return _RULES.builder(name)(setup)


def check_preemption_policy(config: Any) -> None:
    """``habitat_baselines.distrib_preemption.policy``: ``auto`` or a registered
    rule, and one whose needs the trainer provides (``PROVIDES``), ``auto``
    read as the trainer's ``DEFAULT_PREEMPTION`` (a trainer without one,
    such as upstream's, builds none of these rules)."""
    baselines = config.habitat_baselines
    preemption = baselines.get("distrib_preemption")
    if preemption is None:
        return
    chosen = preemption.policy
    policies = (AUTO,) + preemption_rule_names()
    check(
        chosen in policies,
        "habitat_baselines.distrib_preemption.policy",
        chosen,
        f"one of {policies}",
    )
    trainer = trainer_class(config)
    default = getattr(trainer, "DEFAULT_PREEMPTION", None)
    if default is None:
        return
    supported = preemption_rule_names(trainer.PROVIDES)
    if (default if chosen == AUTO else chosen) not in supported:
        raise ConfigError(
            f"habitat_baselines.distrib_preemption.policy={chosen!r} is not allowed "
            f"for trainer {baselines.trainer_name!r}: one of {(AUTO,) + supported}"
        )
