"""Compose habitat-ver configs from Python, as the command line does.

``get_config("gym/ddppo_cartpole")`` gives the same config as
``python -m habitat_ver.run --config-name=gym/ddppo_cartpole``: the search
path holds habitat-lab's configs, habitat-baselines' structured configs and our
tree (wherever the package is installed).  Importing this module imports
:mod:`habitat_ver` first (sim-free mode, registration), as any of its modules.
"""

from pathlib import Path
from typing import Any, List, Optional, Sequence

from habitat.config.default import patch_config
from habitat.config.default_structured_configs import register_hydra_plugin
from habitat_baselines.config.default_structured_configs import (
    HabitatBaselinesConfigPlugin,
)
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from habitat_ver.config.search_path import ConfigTreeSearchPath


def config_root() -> Path:
    """The ``habitat_baselines`` folder of our config tree, as installed."""
    import habitat_ver_configs

    return Path(next(iter(habitat_ver_configs.__path__))) / "habitat_baselines"


# Folders of our tree that are config groups (options chosen inside another
# config, e.g. ``hab_data=generated``), not configs to run.
CONFIG_GROUPS = ("hab_data", "aux_losses", "run_folder")


def config_names() -> List[str]:
    """Every config of our tree, as ``--config-name`` values (no ``.yaml``),
    less the options of :data:`CONFIG_GROUPS`."""
    root = config_root()
    names = (str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.yaml"))
    return sorted(n for n in names if n.split("/")[0] not in CONFIG_GROUPS)


def get_config(
    name: str, overrides: Optional[Sequence[str]] = None, config_dir: Optional[str] = None
) -> Any:
    """Compose and patch config ``name`` with Hydra ``overrides``.

    ``config_dir`` (default: our tree) is the primary config folder, as
    ``--config-path`` is on the command line; habitat-lab's, habitat-baselines'
    and our configs stay on the search path.
    """
    register_hydra_plugin(HabitatBaselinesConfigPlugin)
    register_hydra_plugin(ConfigTreeSearchPath)
    name = name[: -len(".yaml")] if name.endswith(".yaml") else name
    GlobalHydra.instance().clear()
    primary = str(config_root()) if config_dir is None else str(config_dir)
    with initialize_config_dir(version_base=None, config_dir=primary):
        config = compose(config_name=name, overrides=list(overrides or []))
    return patch_config(config)
