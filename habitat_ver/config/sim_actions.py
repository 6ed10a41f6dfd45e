"""Config schema of our task actions, stored in Hydra's ConfigStore beside habitat-lab's.

habitat-lab types each ``habitat.task.actions.<name>`` node by its action's
dataclass, so a key its class lacks is refused.  An action of ours that reads
a key of its own gets a dataclass here, stored in the group configs list
actions from (``/habitat/task/actions``) under the package the action's name
gives; :func:`register_action_configs` stores them (from
:func:`habitat_ver.config.schema.register_configs`).
"""

from dataclasses import dataclass

from habitat.config.default_structured_configs import OracleNavActionConfig
from hydra.core.config_store import ConfigStore


@dataclass
class HabVerOracleNavActionConfig(OracleNavActionConfig):
    """habitat-lab's oracle navigation with our choice of where to stand
    (``habitat_ver/sims/oracle_nav.py``)."""

    type: str = "HabVerOracleNavAction"
    # Stand at least this far (metres, horizontally) from the target when a free
    # navmesh point within spawn_max_dist_to_obj is that far; 0 is habitat-lab's
    # sampling.  Keeps the robot out of the path of the drawer or door the plan
    # opens next to it (docs/HAB.md, "Set Table episode 9").
    spawn_min_dist_to_obj: float = 0.0


def register_action_configs() -> None:
    """Stores ``hab_ver_oracle_nav_action`` in ``habitat/task/actions`` as the
    ``oracle_nav_action`` node, the name habitat-baselines' ``OracleNavPolicy``
    and the PDDL plan give the action (idempotent)."""
    ConfigStore.instance().store(
        group="habitat/task/actions",
        name="hab_ver_oracle_nav_action",
        package="habitat.task.actions.oracle_nav_action",
        node=HabVerOracleNavActionConfig,
        provider="habitat_ver",
    )
