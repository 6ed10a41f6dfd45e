"""Running habitat-baselines' own configs with habitat-ver's trainers.

An upstream config (e.g. habitat-baselines' ``pointnav/ddppo_pointnav.yaml``)
with only ``trainer_name`` changed names upstream's classes where ours must
run.  Each trainer adapts the config once, at construction, before
validation; every substitution is logged once per process and the adapted
config is what the run saves in its checkpoints.

* ``vector_env_factory``: upstream's ``HabitatVectorEnvFactory`` shuffles the
  read-only ``content_scenes`` list in place, so any explicit list of two or
  more scenes ends in ``ReadonlyConfigError``.  Ours
  (:class:`~habitat_ver.envs.factory.VerVectorEnvFactory`) builds the same
  environments and splits the scenes without touching the config.
* ``rollout_storage_name`` (``ver`` only): VER needs
  :class:`~habitat_ver.storage.ver_storage.VERStorage`.  Upstream's lock-step
  storages (``RolloutStorage``, the default, and ``VERRolloutStorage``, which
  upstream's VER uses whatever the key says) are read as ``VERStorage``; any
  other storage is refused with :class:`ConfigError`.
* ``rl.appo`` (``appo`` only): upstream's schema has no such section; its
  defaults (the registered section, :mod:`habitat_ver.trainers.appo_settings`) are filled in, under
  any keys added with ``+habitat_baselines.rl.appo.<key>=<value>``.
* ``updater_name`` (``appo`` only): appo's V-trace is a targets step of our
  :class:`~habitat_ver.updaters.ppo.PPOUpdater`; upstream's ``PPO`` (the
  default, same update arithmetic) is read as ``PPOUpdater``.
"""

import dataclasses
from typing import Any

from habitat.config import read_write
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from habitat_ver.common.log_once import log_once
from habitat_ver.config.errors import ConfigError

OUR_ENV_FACTORY = "habitat_ver.envs.factory.VerVectorEnvFactory"
OUR_VER_STORAGE = "VERStorage"
OUR_UPDATER = "PPOUpdater"
UPSTREAM_UPDATER = "PPO"
# Storage names that mean "the lock-step PPO storage" in upstream configs (and
# in our ddppo configs): under `ver` they are read as VERStorage.
LOCKSTEP_STORAGE_NAMES = ("RolloutStorage", "VERRolloutStorage", "LockstepRolloutStorage")


def _is_upstream_env_factory(target: Any) -> bool:
    if not target:
        return False
    from hydra.utils import get_class

    from habitat_baselines.common.habitat_env_factory import HabitatVectorEnvFactory

    try:
        return get_class(str(target)) is HabitatVectorEnvFactory
    except Exception:  # noqa: BLE001 - an unknown target fails later, upstream's way
        return False


def _replaced(config: Any, key: str, value: Any) -> Any:
    """A copy of ``config`` with ``habitat_baselines.<key>`` set to ``value``."""
    config = config.copy()
    parent, _, leaf = ("habitat_baselines." + key).rpartition(".")
    node = OmegaConf.select(config, parent)
    # Structured sections carry their own struct flag: open the parent itself.
    with read_write(node):
        node[leaf] = value
    return config


def use_our_env_factory(config: Any) -> Any:
    """``config`` with upstream's ``HabitatVectorEnvFactory`` replaced by ours.

    Returns ``config`` itself when it names another factory.
    """
    target = config.habitat_baselines.vector_env_factory.get("_target_")
    if not _is_upstream_env_factory(target):
        return config
    log_once(
        f"habitat_baselines.vector_env_factory._target_={target}: using {OUR_ENV_FACTORY} "
        "(same environments; upstream's shuffles the read-only content_scenes list)"
    )
    return _replaced(config, "vector_env_factory._target_", OUR_ENV_FACTORY)


def use_ver_storage(config: Any, ver_storage: type) -> Any:
    """``config`` with a lock-step storage name replaced by ``VERStorage``
    (``ver_storage``, the class the ``ver`` trainer hands in).

    Raises:
        ConfigError: ``rollout_storage_name`` names neither a ``ver_storage``
            (or subclass) nor one of :data:`LOCKSTEP_STORAGE_NAMES`.
    """
    from habitat_baselines.common.baseline_registry import baseline_registry

    name = config.habitat_baselines.rollout_storage_name
    registered = baseline_registry.get_storage(name)
    if isinstance(registered, type) and issubclass(registered, ver_storage):
        return config
    if name not in LOCKSTEP_STORAGE_NAMES:
        raise ConfigError(
            f"habitat_baselines.rollout_storage_name={name!r} is not allowed for trainer "
            f"{config.habitat_baselines.trainer_name!r}: it needs {OUR_VER_STORAGE!r} "
            f"(or a subclass); {list(LOCKSTEP_STORAGE_NAMES)} are read as {OUR_VER_STORAGE!r}"
        )
    log_once(
        f"habitat_baselines.rollout_storage_name={name}: the ver trainer uses "
        f"{OUR_VER_STORAGE} (VER's variable-experience storage)"
    )
    return _replaced(config, "rollout_storage_name", OUR_VER_STORAGE)


def with_appo_defaults(config: Any) -> Any:
    """``config`` with ``habitat_baselines.rl`` typed by our schema.

    The whole ``rl`` section is retyped as our schema's (upstream's fields plus
    ``appo`` and ``max_nonfinite_rewards``, at their defaults), so the added
    keys are declared ones, not keys the schema check refuses.  Keys a user
    added to upstream's ``rl`` with Hydra's ``+`` (``+habitat_baselines.rl.
    appo.num_rollout_workers=4``) are kept over the defaults.

    Raises:
        ConfigError: such a key is not one of our schema's.
    """
    from habitat_ver.config.schema import rl_schema

    ours = rl_schema()
    rl = config.habitat_baselines.rl
    typed_as = OmegaConf.get_type(rl)
    if isinstance(typed_as, type) and issubclass(typed_as, ours):
        return config
    if "appo" in rl and not dataclasses.is_dataclass(typed_as):
        return config  # untyped (a stored config, plain data): read as it is
    added = [key for key in ("appo", "max_nonfinite_rewards") if key in rl]
    if added:
        log_once(f"habitat_baselines.rl: {added} over our schema's defaults")
    else:
        log_once("habitat_baselines.rl.appo is not in the config: using its defaults")
    # From plain data: OmegaConf refuses to merge a node typed by upstream's
    # RLConfig into its subclass.
    try:
        merged = OmegaConf.merge(
            OmegaConf.structured(ours), OmegaConf.to_container(rl, resolve=False)
        )
    except OmegaConfBaseException as error:
        key = f"habitat_baselines.rl.{error.full_key}" if error.full_key else "habitat_baselines.rl"
        first_line = str(error.msg).splitlines()[0]
        raise ConfigError(f"{key} is not allowed: {first_line}") from None
    return _replaced(config, "rl", merged)


def use_our_updater(config: Any) -> Any:
    """``config`` with upstream's ``PPO`` updater name read as ``PPOUpdater``.

    Returns ``config`` itself when it names another updater.
    """
    if config.habitat_baselines.updater_name != UPSTREAM_UPDATER:
        return config
    log_once(
        f"habitat_baselines.updater_name={UPSTREAM_UPDATER}: the appo trainer uses "
        f"{OUR_UPDATER} (same update; V-trace is its targets step)"
    )
    return _replaced(config, "updater_name", OUR_UPDATER)
