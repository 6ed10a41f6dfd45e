"""habitat-ver's config tree on Hydra's search path.

Two entries use it: the Hydra plugin in ``hydra_plugins/habitat_ver_plugin``
(found by Hydra's scan, for ``python -m habitat_baselines.run``) and our own
entry points (:mod:`habitat_ver.run`, :mod:`habitat_ver.config.compose`), which
register :class:`ConfigTreeSearchPath` themselves because an editable install
may hide the plugin from the scan.  Appending is idempotent, so both together
list the tree once.
"""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

CONFIG_SEARCH_PATH = "pkg://habitat_ver_configs/habitat_baselines"
PROVIDER = "habitat_ver"


def add_config_tree(search_path: ConfigSearchPath) -> None:
    """Appends our config tree to ``search_path`` unless it is there already."""
    if not any(element.path == CONFIG_SEARCH_PATH for element in search_path.get_path()):
        search_path.append(provider=PROVIDER, path=CONFIG_SEARCH_PATH)


class ConfigTreeSearchPath(SearchPathPlugin):
    """Adds ``habitat_ver_configs/habitat_baselines`` to Hydra's search path."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        add_config_tree(search_path)
