"""Every name habitat-ver puts into habitat's registries, in one place.

Ours replace upstream's ``ddppo`` and ``ver`` trainers (the product asks for
those names); upstream's classes stay reachable as ``upstream_ddppo`` and
``upstream_ver`` so one install can run both side by side.  Any other attempt
to overwrite an existing registry name is refused with an error.
"""

from typing import Any, Dict

_DONE = False

# Trainer names we deliberately take over, and where upstream's class moves.
REPLACED_TRAINERS = {"ddppo": "upstream_ddppo", "ver": "upstream_ver"}


class RegistryConflictError(RuntimeError):
    """Raised when a registration would silently replace someone else's class."""


def _register(table: Dict[str, Any], kind: str, name: str, cls: Any) -> None:
    existing = table.get(name)
    if existing is not None and existing is not cls:
        raise RegistryConflictError(
            f"{kind} name {name!r} is already registered to "
            f"{existing.__module__}.{existing.__qualname__}; habitat-ver refuses "
            f"to overwrite it with {cls.__module__}.{cls.__qualname__}. "
            f"Only the trainers {sorted(REPLACED_TRAINERS)} are replaced."
        )
    table[name] = cls


def _keep_upstream_trainers() -> None:
    """Make upstream's trainers reachable under their second names."""
    from habitat_baselines.common.baseline_registry import baseline_registry

    trainers = baseline_registry.mapping["trainer"]
    for name, alias in REPLACED_TRAINERS.items():
        upstream = trainers.get(name)
        if upstream is not None and upstream.__module__.startswith("habitat_baselines."):
            _register(trainers, "trainer", alias, upstream)


def _replace_trainer(name: str, cls: Any) -> None:
    from habitat_baselines.common.baseline_registry import baseline_registry

    trainers = baseline_registry.mapping["trainer"]
    upstream = trainers.get(name)
    if upstream is not None and upstream is not cls:
        _register(trainers, "trainer", REPLACED_TRAINERS[name], upstream)
    trainers[name] = cls


def register_all() -> None:
    """Register our classes.  Idempotent; called by ``import habitat_ver``."""
    global _DONE
    if _DONE:
        return
    import habitat  # noqa: F401  (after sim-free mode is decided)
    import habitat_baselines  # noqa: F401  (upstream registers its classes)
    from habitat_baselines.common.baseline_registry import baseline_registry

    from habitat_ver.compat import sim_free

    if sim_free.is_active():
        sim_free.guard_simulator_entry_points()

    import habitat_ver.envs  # noqa: F401  (gym ids)
    from habitat_ver.config.schema import register_configs
    from habitat_ver.trainers.ddppo import DDPPOTrainer
    from habitat_ver.trainers.ver import VERTrainer

    _keep_upstream_trainers()
    _replace_trainer("ddppo", DDPPOTrainer)
    _replace_trainer("ver", VERTrainer)
    mapping = baseline_registry.mapping
    for kind, name, cls in _registrations():
        _register(mapping[kind], kind, name, cls)
    _register_habitat_classes()
    _register_preemption_rules()
    _register_return_estimators()
    _register_env_pools()
    _register_settings_checks()
    _register_settings_sections()
    register_configs()
    _DONE = True


def _register_habitat_classes() -> None:
    """Classes that go into habitat-lab's own registry (not baselines')."""
    from habitat.core.registry import registry
    from hydra.core.config_store import ConfigStore

    from habitat_ver.envs.no_episodes import DATASET_NAME, NoEpisodesDataset
    from habitat_ver.skills import markers
    from habitat_ver.skills.geodesic import TargetGoalGeodesicSensor, TargetStartGeodesicSensor

    _register(registry.mapping["dataset"], "dataset", DATASET_NAME, NoEpisodesDataset)
    for sensor in (TargetStartGeodesicSensor, TargetGoalGeodesicSensor, markers.VERMarkersSensor):
        _register(registry.mapping["sensor"], "sensor", sensor.__name__, sensor)
    # In habitat-lab's group of lab sensor configs, as its own sensors are.
    ConfigStore.instance().store(
        package=f"habitat.task.lab_sensors.{markers.CONFIG_NAME}",
        group="habitat/task/lab_sensors",
        name=markers.CONFIG_NAME,
        node=markers.VERMarkersSensorConfig,
    )


def _register_preemption_rules() -> None:
    """``habitat_baselines.distrib_preemption.policy`` names (our own registry)."""
    from habitat_ver.common.capabilities import CUT_ROLLOUT, VARIABLE_EXPERIENCE
    from habitat_ver.distributed.preemption import RolloutTracker
    from habitat_ver.distributed.preemption_rule import NoPreemption, register_preemption_rule
    from habitat_ver.distributed.ver_tracker import VERPreemptionTracker

    register_preemption_rule("none", NoPreemption.from_setup)
    register_preemption_rule("ddppo", RolloutTracker.from_setup, needs=(CUT_ROLLOUT,))
    register_preemption_rule(
        "ver", VERPreemptionTracker.from_setup, needs=(CUT_ROLLOUT, VARIABLE_EXPERIENCE)
    )


def _register_return_estimators() -> None:
    """``habitat_baselines.returns.estimator`` names (our own registry); the
    first one a trainer can run is its ``auto``."""
    from habitat_ver.common.capabilities import OFF_POLICY_TRAJECTORIES, ROLLOUT_STEPS
    from habitat_ver.updaters.gae_targets import GAETargets
    from habitat_ver.updaters.targets import register_return_estimator
    from habitat_ver.updaters.vtrace_targets import VTraceTargets

    register_return_estimator("gae", GAETargets.from_config, needs=(ROLLOUT_STEPS,))
    register_return_estimator("vtrace", VTraceTargets.from_config, needs=(OFF_POLICY_TRAJECTORIES,))


def _register_env_pools() -> None:
    """The env pools a trainer's ``ENV_POOL`` names (our own registry), each
    with the protocol it provides."""
    from habitat_ver.envs.pools import grouped_pool, per_env_pool
    from habitat_ver.system.env_pool import (
        LOCKSTEP,
        AsyncEnvPool,
        AsyncGroupPool,
        VectorEnvPool,
        register_env_pool,
    )

    register_env_pool(LOCKSTEP, VectorEnvPool)  # upstream's _init_envs builds it
    register_env_pool("per_env", AsyncEnvPool, per_env_pool)
    register_env_pool("grouped", AsyncGroupPool, grouped_pool)


def _register_settings_checks() -> None:
    """The components' checks of the settings they read, which config
    validation runs (habitat_ver.config.settings_checks), in this order."""
    from habitat_ver.config.settings_checks import register_settings_check
    from habitat_ver.distributed.preemption_rule import check_preemption_policy
    from habitat_ver.skills.checkpoint_check import check_skill_checkpoints
    from habitat_ver.system.scheduling import check_learner_threads
    from habitat_ver.trainers.ver_settings import check_ver_settings
    from habitat_ver.updaters.targets import check_return_estimator

    register_settings_check("skill checkpoints", check_skill_checkpoints)
    register_settings_check("learner threads", check_learner_threads)
    register_settings_check("preemption policy", check_preemption_policy, training=True)
    register_settings_check("ver settings", check_ver_settings, training=True)
    register_settings_check("return estimator", check_return_estimator, training=True)


def _register_settings_sections() -> None:
    """The config sections of ``habitat_baselines`` (and of its ``rl``) the
    schema is composed from (habitat_ver.common.settings_sections), each
    declared beside the code that reads it, in this order."""
    from habitat_ver.common.settings_sections import register_settings_section
    from habitat_ver.config.embedded_env import EmbeddedEnvConfig
    from habitat_ver.distributed.preemption_rule import DistribPreemptionConfig
    from habitat_ver.system.scheduling import LearnerConfig
    from habitat_ver.system.trainer_watch import EnvWorkersConfig
    from habitat_ver.policies.ver_policy_config import VERPolicyConfig
    from habitat_ver.trainers.appo_settings import AppoConfig
    from habitat_ver.trainers.progress import ProgressConfig
    from habitat_ver.trainers.ver_settings import HabitatVerVERConfig, VERSystemConfig
    from habitat_ver.updaters.targets import ReturnsConfig

    register_settings_section("rl.ver", HabitatVerVERConfig)
    register_settings_section("rl.appo", AppoConfig)
    register_settings_section("embedded_env", EmbeddedEnvConfig)
    register_settings_section("progress", ProgressConfig)
    register_settings_section("ver_system", VERSystemConfig)
    register_settings_section("ver_policy", VERPolicyConfig)
    register_settings_section("distrib_preemption", DistribPreemptionConfig)
    register_settings_section("env_workers", EnvWorkersConfig)
    register_settings_section("learner", LearnerConfig)
    register_settings_section("returns", ReturnsConfig)


def _registrations():
    """(registry kind, name, class) for everything except replaced trainers."""
    from habitat_ver.storage.rollout_storage import LockstepRolloutStorage
    from habitat_ver.updaters.ddppo import DDPPOUpdater
    from habitat_ver.updaters.ppo import PPOUpdater
    from habitat_ver.policies.compact_policy import CompactPolicy
    from habitat_ver.policies.ver_policy import VERPolicy
    from habitat_ver.skills.hierarchical_policy import VERHierarchicalPolicy
    from habitat_ver.storage.ver_storage import VERStorage
    from habitat_ver.trainers.appo import AppoTrainer

    return [
        ("trainer", "appo", AppoTrainer),
        ("storage", "LockstepRolloutStorage", LockstepRolloutStorage),
        ("updater", "PPOUpdater", PPOUpdater),
        ("updater", "DDPPOUpdater", DDPPOUpdater),
        ("storage", "VERStorage", VERStorage),
        ("policy", "CompactPolicy", CompactPolicy),
        ("policy", "VERPolicy", VERPolicy),
        ("policy", "VERHierarchicalPolicy", VERHierarchicalPolicy),
    ]
