"""habitat-lab's oracle navigation, with a fallback where its sampler finds no spot.

habitat-lab's ``OracleNavAction`` picks where to drive for a target by sampling
``num_spawn_attempts`` navmesh points within ``spawn_max_dist_to_obj`` of it
and keeping the first free one.  When none is free it silently returns the
robot's current pose: the skill then "finishes" where the robot stands,
metres away, and the next PDDL action finds ``robot_at`` false.  On our
multi-arrangement scenes that happened beside a table in a corner (the
closest navmesh point 0.6 m away, every sample refused) and for an object
whose closest navmesh point is on a small separate island: 6 of 18 val
episodes failed (docs/HAB.md).  Driving to the closest navmesh point always
(``spawn_max_dist_to_obj: -1``) solved those but put the robot in an opening
drawer's path in another.  :class:`HabVerOracleNavAction` samples as habitat-lab
does and drives to the closest point on the main island only when no sample
is free.

Registered as ``HabVerOracleNavAction`` (``habitat.task.actions.<name>.type``);
imported in env workers when a config names it (:data:`habitat_ver.sims.ACTION_MODULES`).
"""

from typing import Any, Callable, Tuple

import numpy as np
from habitat.core.registry import registry
from habitat.tasks.rearrange.actions.oracle_nav_action import OracleNavAction
from habitat.tasks.rearrange.utils import place_agent_at_dist_from_pos

# habitat-lab's distance that means "the navmesh point closest to the target".
CLOSEST_POINT = -1.0


def stand_near(
    target: np.ndarray,
    distance: float,
    sim: Any,
    attempts: int,
    agent: Any,
    place: Callable[..., Tuple[Any, float, bool]] = place_agent_at_dist_from_pos,
) -> Tuple[Any, float, bool]:
    """Where the robot should stand to reach ``target``: a free navmesh point
    within ``distance`` (habitat-lab's sampler, facing the target) or, when none
    of its ``attempts`` samples is free, the closest navmesh point.

    Returns:
        ``(position, angle, failed)`` as ``place`` returns them.
    """
    start, angle, failed = place(target, 0.0, distance, sim, attempts, True, agent)
    if failed and distance != CLOSEST_POINT:
        start, angle, failed = place(target, 0.0, CLOSEST_POINT, sim, attempts, True, agent)
    return start, angle, failed


@registry.register_task_action
class HabVerOracleNavAction(OracleNavAction):
    """``OracleNavAction`` that falls back to the closest navmesh point."""

    def _get_target_for_idx(self, nav_to_target_idx: int) -> Any:
        if self.motion_type != "base_velocity" or nav_to_target_idx in self._targets:
            return super()._get_target_for_idx(nav_to_target_idx)
        entity = self._poss_entities[nav_to_target_idx]
        target = np.array(self._task.pddl_problem.sim_info.get_entity_pos(entity))
        start, _, _ = stand_near(
            target,
            self._config.spawn_max_dist_to_obj,
            self._sim,
            self._config.num_spawn_attempts,
            self.cur_articulated_agent,
        )
        self._targets[nav_to_target_idx] = (np.array(start), target)
        return self._targets[nav_to_target_idx]
