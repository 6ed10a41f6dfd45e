"""Hydra search-path plugin: makes habitat-ver's configs and classes visible.

Hydra scans the ``hydra_plugins`` namespace package of every installed
distribution.  Finding this plugin appends habitat-ver's config tree to the
search path and imports :mod:`habitat_ver`, which registers our trainers,
storages and policies with habitat-baselines' registry.  So
``python -m habitat_baselines.run --config-name=rearrange/ver_pick`` works with
no code change once the package is installed.

Nothing of habitat-ver imports this module (our own entry points register
:class:`habitat_ver.config.search_path.ConfigTreeSearchPath`), so the import of
:mod:`habitat_ver` here closes no import loop.
"""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class HabitatVerSearchPathPlugin(SearchPathPlugin):
    """Adds ``habitat_ver_configs/habitat_baselines`` to Hydra's search path."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        import habitat_ver  # noqa: F401  (registration happens at import)
        from habitat_ver.common.usage import UPSTREAM_CLI, program_name
        from habitat_ver.config.config_name_hint import hint_unknown_config
        from habitat_ver.config.search_path import add_config_tree

        add_config_tree(search_path)
        if program_name() == UPSTREAM_CLI:  # habitat_ver.run says it in its error
            hint_unknown_config(search_path)
