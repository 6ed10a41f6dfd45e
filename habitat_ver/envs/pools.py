"""Our env pools' builders: a run's config to a pool of its envs.

The kinds registered in :mod:`habitat_ver.registration` (their registry is
:mod:`habitat_ver.system.env_pool`'s) are built here from a
:class:`~habitat_ver.system.env_pool.PoolSetup` (:func:`pool_setup`): the
envs of this rank as the config's
:class:`~habitat_ver.envs.factory.VerVectorEnvFactory` builds them.  Each
builder reads the settings of its own from the config and returns the
protocol its kind provides.  ``lockstep`` has no builder here: upstream's
``PPOTrainer._init_envs`` builds it with the same factory.
"""

from typing import Any, Tuple

from habitat import logger

from habitat_ver.common.checks import AUTO
from habitat_ver.system.trainer_watch import hang_warning_seconds
from habitat_ver.envs.builder import scenario_for
from habitat_ver.envs.factory import env_builders
from habitat_ver.system.env_pool import AsyncEnvPool, AsyncGroupPool, PoolSetup
from habitat_ver.system.grouped_pool import GroupedPool
from habitat_ver.system.per_env_pool import PerEnvPool


def pool_setup(config: Any, serial: bool = False) -> PoolSetup:
    """This rank's envs of ``config``, for a pool to step.

    Args:
        config: the run's config.
        serial: run the envs in this process (tests, debugging).

    Raises:
        ConfigError: the config's ``vector_env_factory`` is not ours
            (:func:`~habitat_ver.envs.factory.configured_factory`).
    """
    makers = env_builders(config)
    first = makers[0][0]
    return PoolSetup(
        makers=makers,
        describe=lambda i: f"global index {first + i}, {scenario_for(config, first + i)}",
        hang_warning_s=hang_warning_seconds(config),
        serial=serial,
        config=config,
    )


def per_env_pool(setup: PoolSetup) -> AsyncEnvPool:
    """``per_env``: one worker process per env."""
    return PerEnvPool(
        [make for _, make in setup.makers],
        describe=setup.describe,
        serial=setup.serial,
        hang_warning_s=setup.hang_warning_s,
    )


def is_auto(value: Any) -> bool:
    """Whether a layout key says ``auto`` (any case)."""
    return isinstance(value, str) and value.strip().lower() == AUTO


def resolve_layout(num_environments: int, workers: Any, groups: Any) -> Tuple[Any, Any]:
    """``(num_rollout_workers, num_env_groups)`` with ``auto`` resolved.

    ``auto`` workers: one per env (``num_environments``): on wait-bound envs a
    worker stepping several envs in turn waits for each of them in turn
    (docs/APPO.md has the numbers).
    ``auto`` groups: 2 when the envs per worker are even (Sample Factory's
    double buffering), else 1.  Values that are not ``auto`` come back as
    they are, for :func:`habitat_ver.trainers.appo.validate_appo` to check.
    """
    if is_auto(workers):
        workers = max(1, num_environments)
    if is_auto(groups):
        per_worker = num_environments // workers if isinstance(workers, int) and workers > 0 else 1
        groups = 2 if per_worker >= 2 and per_worker % 2 == 0 else 1
    return workers, groups


def grouped_pool(setup: PoolSetup) -> AsyncGroupPool:
    """``grouped``: ``rl.appo.num_rollout_workers`` worker processes, each
    stepping ``rl.appo.num_env_groups`` groups of envs in turn; all in this
    process with ``rl.appo.serial``."""
    appo = setup.config.habitat_baselines.rl.appo
    num_envs = len(setup.makers)
    workers, groups = resolve_layout(num_envs, appo.num_rollout_workers, appo.num_env_groups)
    logger.info(
        f"habitat_ver: appo steps {num_envs} env(s) in {workers} rollout worker(s), "
        f"{groups} env group(s) each (rl.appo.num_rollout_workers="
        f"{appo.num_rollout_workers}, num_env_groups={appo.num_env_groups})"
    )
    return GroupedPool(
        setup.makers,
        workers,
        groups,
        describe=setup.describe,
        serial=setup.serial or appo.serial,
        hang_warning_s=setup.hang_warning_s,
    )
