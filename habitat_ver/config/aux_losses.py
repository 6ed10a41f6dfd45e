"""``habitat_baselines.rl.auxiliary_losses``: upstream's auxiliary losses on our runs.

habitat-baselines builds each entry ``<name>: {<argument>: <value>, ...}`` as
the auxiliary loss registered under ``<name>`` (``cpca``: CPC|A, action-
conditional contrastive predictive coding), with the policy's ``net``, inside
the policy (``aux_loss_modules``); its ``evaluate_actions`` returns their
losses, which the PPO update adds to its own and logs as
``learner/aux/<name>/loss``.  Our policies (``CompactPolicy``, ``VERPolicy``)
build them too, so ``ddppo``, ``ver`` and ``appo`` train them.

Attaching one, three ways:

* ``aux_losses=cpca``: the config group ``aux_losses`` of our tree, chosen
  (``none``) by the gym, doom, pointnav and rearrange configs;
* upstream's group override,
  ``+habitat_baselines/rl/auxiliary_losses@<the same, dotted>.cpca=cpca``.
  Hydra looks a group added on the command line up relative to the primary
  config's folder (``pointnav/habitat_baselines/rl/auxiliary_losses/cpca``
  for ``--config-name=pointnav/...``), where nothing was; so
  :func:`register_aux_loss_groups` stores upstream's options under every
  folder of our tree too;
* ``+habitat_baselines.rl.auxiliary_losses.cpca.loss_scale=0.1``: our schema
  takes any argument names there (upstream's refused every one), checked by
  :func:`validate_aux_losses`.
"""

import inspect
from pathlib import Path
from typing import Any, Dict, List

from hydra.core.config_store import ConfigStore

from habitat_ver.config.errors import ConfigError

KEY = "habitat_baselines.rl.auxiliary_losses"
# Upstream's ConfigStore group of the losses' settings.
UPSTREAM_GROUP = "habitat_baselines/rl/auxiliary_losses"
# Losses that predict the visual embedding (upstream asserts ``not net.is_blind``).
VISUAL_AUX_LOSSES = ("cpca",)
# Constructor arguments the policy passes itself.
_POLICY_ARGUMENTS = ("self", "action_space", "net")


def registered_aux_losses() -> List[str]:
    from habitat_baselines.common.baseline_registry import baseline_registry

    import habitat_baselines.rl.ppo.cpc_aux_loss  # noqa: F401  (registers cpca)

    return sorted(baseline_registry.mapping.get("aux_loss", {}))


def _arguments(loss_class: Any) -> List[str]:
    parameters = inspect.signature(loss_class.__init__).parameters
    return [name for name in parameters if name not in _POLICY_ARGUMENTS]


def aux_loss_settings(config: Any) -> Dict[str, Any]:
    """``rl.auxiliary_losses`` of ``config`` (empty when absent)."""
    losses = config.habitat_baselines.rl.get("auxiliary_losses")
    return {} if losses is None else dict(losses)


def validate_aux_losses(config: Any) -> None:
    """Each auxiliary loss is registered and given only arguments it takes.

    Raises:
        ConfigError: naming the key, the value and what is allowed.
    """
    from habitat_baselines.common.baseline_registry import baseline_registry

    for name, settings in aux_loss_settings(config).items():
        loss_class = baseline_registry.get_auxiliary_loss(str(name))
        if loss_class is None:
            raise ConfigError(
                f"{KEY}.{name} is not allowed: not a registered auxiliary loss; "
                f"registered: {registered_aux_losses()}"
            )
        allowed = _arguments(loss_class)
        if not hasattr(settings, "items"):
            raise ConfigError(
                f"{KEY}.{name}={settings!r} is not allowed: the loss's arguments as a "
                f"mapping, e.g. +{KEY}.{name}={{}} (its defaults) or "
                f"+{KEY}.{name}.{allowed[-1]}=..."
            )
        for argument, value in settings.items():
            if argument not in allowed:
                raise ConfigError(
                    f"{KEY}.{name}.{argument}={value!r} is not allowed: "
                    f"{loss_class.__name__} takes {allowed}"
                )


def check_aux_losses_fit(aux_loss_config: Any, is_blind: bool, policy_name: str) -> None:
    """Refuses a visual auxiliary loss on a policy that sees no image.

    Upstream asserts it inside the loss's constructor (``CPCA only works for
    networks with a visual encoder``).

    Raises:
        ConfigError: naming the loss and the policy.
    """
    if aux_loss_config is None or not is_blind:
        return
    for name in aux_loss_config:
        if name in VISUAL_AUX_LOSSES:
            raise ConfigError(
                f"{KEY}.{name} is not allowed with this env: {name} predicts the visual "
                f"embedding, and {policy_name} gets no image observation here; use an env "
                "with a camera (e.g. a doom/ or pointnav/ config) or drop the loss"
            )


def _tree_folders() -> List[str]:
    """The folders of our config tree that hold configs to run (``pointnav``, ...)."""
    import habitat_ver_configs

    root = Path(next(iter(habitat_ver_configs.__path__))) / "habitat_baselines"
    return sorted(p.name for p in root.iterdir() if p.is_dir() and any(p.glob("*.yaml")))


def register_aux_loss_groups() -> None:
    """Stores upstream's auxiliary-loss options (``cpca``) under
    ``<folder>/habitat_baselines/rl/auxiliary_losses`` for each folder of our
    tree, where Hydra looks up upstream's group override given with a
    ``--config-name`` in that folder (idempotent)."""
    store = ConfigStore.instance()
    group: Any = store.repo
    for part in UPSTREAM_GROUP.split("/"):
        group = group.get(part, {})
    for folder in _tree_folders():
        for file_name, option in group.items():
            store.store(
                name=file_name[: -len(".yaml")],
                node=option.node,
                group=f"{folder}/{UPSTREAM_GROUP}",
                package=option.package,
                provider="habitat_ver",
            )
