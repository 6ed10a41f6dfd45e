"""Cross-field checks of a run's config, called once at trainer start.

Each failure raises :class:`ConfigError` naming the key, the bad value and what
is allowed, before any process is spawned or any file written.

This module imports no learning code.  The checks of one trainer's own
settings are that trainer's: its class's ``check_config(config)`` classmethod
(``ddppo``, ``ver``, ``appo`` and any subclass), called by
:func:`validate_trainer` through the class that
``habitat_baselines.trainer_name`` names; upstream's trainers have none.  The
checks it picks live here and in :mod:`habitat_ver.config.honoured_keys`.  The
settings of a component (a return estimator, a preemption rule, the learner's
threads, ``ver``'s overlap, the skills' checkpoints) are checked next to that
component's code, by a check it registers in
:mod:`habitat_ver.config.settings_checks`; :func:`validate` runs them all.  A
policy names the recurrent cores it builds (its class's ``RNN_TYPES``).

Checks of what only training reads (:func:`training_checks`: the rollout and
its minibatches, the learning rule's numbers, the trainer's collection
settings) are skipped under ``habitat_baselines.evaluate=True``: every trainer
evaluates through upstream's evaluator on a vector env, and evaluation may
legitimately run fewer envs than training (one per scene).
"""

import difflib
import math
import os
from typing import Any, Optional, Tuple

from habitat_ver.common.checkpoint import PREVIOUS_RESUME_STATE_NAME, RESUME_STATE_NAME
from habitat_ver.common.checks import in_range as _in_range
from habitat_ver.common.checks import is_count as _is_count
from habitat_ver.config.aux_losses import validate_aux_losses
from habitat_ver.config.errors import ConfigError  # noqa: F401  (callers import it from here)
from habitat_ver.config.errors import check
from habitat_ver.config.honoured_keys import trainer_class
from habitat_ver.config.known_keys import unknown_keys
from habitat_ver.config.settings_checks import SettingsCheck, settings_checks
from habitat_ver.config.validate_envs import (
    validate_gym_id,
    validate_pointnav_dataset,
    validate_render_device,
    validate_simulator_available,
)


def validate_known_keys(config: Any) -> None:
    """No key the schema lacks (Hydra's ``+key=value`` adds any)."""
    for unknown in unknown_keys(config):
        close = difflib.get_close_matches(str(unknown.path.rsplit(".", 1)[-1]), unknown.known)
        hint = f"did you mean {close[0]!r}?" if close else f"its keys are {unknown.known}"
        check(
            False, unknown.path, unknown.value, f"not a key of {unknown.schema.__name__} ({hint})"
        )


def validate_run_size(config: Any) -> None:
    """What evaluation builds too: the envs, and the policy with its optimizer
    (upstream's agent builds the updater for evaluation as well)."""
    baselines = config.habitat_baselines
    check(
        baselines.num_environments > 0,
        "habitat_baselines.num_environments",
        baselines.num_environments,
        "must be a positive integer",
    )
    ppo = baselines.rl.ppo
    key = "habitat_baselines.rl.ppo."
    check(_is_count(ppo.hidden_size, 1), key + "hidden_size", ppo.hidden_size, "an integer >= 1")
    for name, allowed in (
        ("lr", "a finite number > 0"),
        ("eps", "a finite number > 0 (Adam's epsilon)"),
    ):
        check(_in_range(ppo[name], 0.0, math.inf, True), key + name, ppo[name], allowed)
    layers = baselines.rl.ddppo.num_recurrent_layers
    check(
        _is_count(layers, 1),
        "habitat_baselines.rl.ddppo.num_recurrent_layers",
        layers,
        "an integer >= 1",
    )


def validate_training(config: Any) -> None:
    """Numeric settings of the rollout, the learning rule and DD-PPO (only
    training reads them)."""
    baselines = config.habitat_baselines
    ppo = baselines.rl.ppo
    check(ppo.num_steps > 0, "habitat_baselines.rl.ppo.num_steps", ppo.num_steps, "must be >= 1")
    check(
        ppo.num_mini_batch > 0,
        "habitat_baselines.rl.ppo.num_mini_batch",
        ppo.num_mini_batch,
        "must be >= 1",
    )
    check(ppo.ppo_epoch > 0, "habitat_baselines.rl.ppo.ppo_epoch", ppo.ppo_epoch, "must be >= 1")
    _validate_ppo_numbers(ppo)
    sync_frac = baselines.rl.ddppo.sync_frac
    check(
        0.0 < sync_frac <= 1.0,
        "habitat_baselines.rl.ddppo.sync_frac",
        sync_frac,
        "must be in (0, 1]",
    )
    # Upstream takes the update count modulo these: 0 divides by zero.
    intervals = {"log_interval": baselines.log_interval}
    preemption_section = baselines.rl.get("preemption")
    if preemption_section is not None:
        intervals["rl.preemption.save_resume_state_interval"] = (
            preemption_section.save_resume_state_interval
        )
    for name, value in intervals.items():
        check(_is_count(value, 1), f"habitat_baselines.{name}", value, "an integer >= 1 (updates)")
    limit = baselines.rl.get("max_nonfinite_rewards")
    if limit is not None:
        check(
            isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0,
            "habitat_baselines.rl.max_nonfinite_rewards",
            limit,
            "must be an integer >= 0",
        )


# Upstream reads one key of each pair and wants the other at -1: how long a
# run is (updates or steps) and when it checkpoints (a count spread over the
# run, or every so many updates).
_SCHEDULE_PAIRS = (
    (
        ("num_updates", lambda v: _is_count(v, 1), "an integer >= 1"),
        ("total_num_steps", lambda v: _in_range(v, 0.0, math.inf, True), "a number > 0"),
    ),
    (
        ("num_checkpoints", lambda v: _is_count(v, 1), "an integer >= 1"),
        ("checkpoint_interval", lambda v: _is_count(v, 1), "an integer >= 1 (updates)"),
    ),
)


def validate_schedule(config: Any) -> None:
    """Run length and checkpoint schedule: exactly one key of each pair is set."""
    baselines = config.habitat_baselines
    for pair in _SCHEDULE_PAIRS:
        (first, _, first_allowed), (second, _, second_allowed) = pair
        usage = (
            f"set exactly one of habitat_baselines.{first} ({first_allowed}) and "
            f"habitat_baselines.{second} ({second_allowed}); the other stays -1"
        )
        chosen = [name for name, _, _ in pair if baselines[name] != -1]
        check(
            len(chosen) == 1,
            f"habitat_baselines.{first}",
            baselines[first],
            f"with habitat_baselines.{second}={baselines[second]!r}: {usage}",
        )
        for name, is_allowed, _ in pair:
            value = baselines[name]
            check(value == -1 or is_allowed(value), f"habitat_baselines.{name}", value, usage)


def _validate_ppo_numbers(ppo: Any) -> None:
    """Learning-rule numbers: finite and in their range (NaN never is); ``lr``
    and ``eps`` are :func:`validate_run_size`'s."""
    key = "habitat_baselines.rl.ppo."
    for name, low, high, low_open, allowed in (
        ("clip_param", 0.0, 1.0, True, "a number in (0, 1] (PPO's ratio clip)"),
        ("gamma", 0.0, 1.0, False, "a discount in [0, 1]"),
        ("tau", 0.0, 1.0, False, "GAE's lambda, in [0, 1]"),
        ("value_loss_coef", 0.0, math.inf, False, "a finite number >= 0"),
        ("entropy_coef", 0.0, math.inf, False, "a finite number >= 0"),
        ("max_grad_norm", 0.0, math.inf, True, "a finite number > 0"),
    ):
        check(_in_range(ppo[name], low, high, low_open), key + name, ppo[name], allowed)
    check(
        _is_count(ppo.reward_window_size, 1),
        key + "reward_window_size",
        ppo.reward_window_size,
        "an integer >= 1",
    )


def validate_policies(config: Any) -> None:
    """Each agent's policy is registered, and one that names the recurrent
    cores it builds (its class's ``RNN_TYPES``, inherited by a subclass) gets
    one of them."""
    from habitat_baselines.common.baseline_registry import baseline_registry

    baselines = config.habitat_baselines
    registered = sorted(baseline_registry.mapping["policy"])
    rnn_type = baselines.rl.ddppo.rnn_type
    for agent, policy in baselines.rl.policy.items():
        check(
            policy.name in registered,
            f"habitat_baselines.rl.policy.{agent}.name",
            policy.name,
            f"not a registered policy; registered: {registered}",
        )
        allowed = getattr(baseline_registry.get_policy(policy.name), "RNN_TYPES", None)
        if allowed is not None:
            check(
                str(rnn_type).lower() in [a.lower() for a in allowed],
                "habitat_baselines.rl.ddppo.rnn_type",
                rnn_type,
                f"one of {', '.join(allowed)} (any case) with rl.policy.{agent}.name={policy.name}",
            )


def validate_env_workers(config: Any) -> None:
    """``habitat_baselines.env_workers`` (absent from upstream-based configs)."""
    section = config.habitat_baselines.get("env_workers")
    if section is None:
        return
    seconds = section.hang_warning_seconds
    check(
        seconds > 0 and math.isfinite(seconds),
        "habitat_baselines.env_workers.hang_warning_seconds",
        seconds,
        "a finite number of seconds > 0",
    )


def several_ranks(config: Any) -> Optional[str]:
    """Why this process is one of several ranks (torchrun, SLURM tasks, or
    forced distributed), or None when it runs alone."""
    from habitat_baselines.rl.ddppo.ddp_utils import get_distrib_size

    ranks = get_distrib_size()[2]
    if ranks > 1:
        return f"this process is one of {ranks} ranks (torchrun or SLURM tasks)"
    if config.habitat_baselines.rl.ddppo.force_distributed:
        return "habitat_baselines.rl.ddppo.force_distributed=True"
    return None


def validate_ranks(config: Any) -> None:
    """Evaluation runs on one rank: refused before any env starts when this
    process is one of several (a trainer that runs on one rank refuses them
    in its ``check_config``)."""
    here = several_ranks(config)
    if here is None:
        return
    check(
        not config.habitat_baselines.evaluate,
        "habitat_baselines.evaluate",
        True,
        f"evaluation runs on one rank, and {here}; start it as one process",
    )


def validate_trainer(config: Any) -> None:
    """The checks of the trainer's own training settings: its class's
    ``check_config(config)`` (inherited by a subclass; upstream's trainers
    have none, and their settings are not ours to check).  One of
    :func:`training_checks`: evaluation collects through upstream's
    evaluator, whatever the trainer."""
    check_config = getattr(trainer_class(config), "check_config", None)
    if check_config is not None:
        check_config(config)


def validate_eval(config: Any) -> None:
    """Evaluation needs an existing checkpoint file or folder."""
    baselines = config.habitat_baselines
    if not baselines.evaluate or not baselines.eval.should_load_ckpt:
        return
    path = baselines.eval_ckpt_path_dir
    check(
        os.path.exists(path),
        "habitat_baselines.eval_ckpt_path_dir",
        path,
        "no such checkpoint file or folder",
    )
    check(
        os.path.basename(path) not in (RESUME_STATE_NAME, PREVIOUS_RESUME_STATE_NAME),
        "habitat_baselines.eval_ckpt_path_dir",
        path,
        "a resume state resumes training and is not a checkpoint; evaluate a "
        "ckpt.<n>.pth, latest.pth or the checkpoint folder",
    )


def training_checks() -> Tuple[SettingsCheck, ...]:
    """Checks of settings only training reads, skipped under
    ``habitat_baselines.evaluate=True`` (an evaluation with one env per scene
    refused for num_mini_batch > num_environments, say): the rollout's and
    the learning rule's numbers, the components' registered checks of
    training settings, and the trainer's own."""
    return (validate_training,) + settings_checks(training=True) + (validate_trainer,)


def is_evaluation(config: Any) -> bool:
    """Whether the run evaluates (``habitat_baselines.evaluate``): nothing trains."""
    return bool(config.habitat_baselines.evaluate)


def validate(config: Any) -> None:
    """All checks; call before building environments."""
    validate_known_keys(config)
    validate_simulator_available(config)
    validate_ranks(config)
    from habitat_ver.config.hab_data import check_hab_data

    check_hab_data(config)
    validate_pointnav_dataset(config)
    if several_ranks(config) is None:  # a rank's device is chosen at its start
        validate_render_device(config)
    validate_run_size(config)
    # upstream's trainer constructor reads the schedule, evaluating or not
    validate_schedule(config)
    validate_gym_id(config)  # first: its dependencies may register policies
    validate_policies(config)
    validate_aux_losses(config)
    for component_check in settings_checks(training=False):
        component_check(config)
    if not is_evaluation(config):
        for training_check in training_checks():
            training_check(config)
    validate_env_workers(config)
    validate_eval(config)
    embedded = config.habitat_baselines.get("embedded_env")
    if embedded is not None:
        from habitat_ver.config.embedded_env import validate_embedded_env

        validate_embedded_env(embedded)
