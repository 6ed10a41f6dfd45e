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
drawer's path in another: the drawer ``open_cab`` opens met the robot 0.6 m
from the object inside and was pushed shut.  :class:`HabVerOracleNavAction`
samples as habitat-lab does, keeping ``spawn_min_dist_to_obj`` from the target
where a free sample that far exists (our config key,
:class:`habitat_ver.config.sim_actions.HabVerOracleNavActionConfig`), and
drives to the closest point on the main island only when no sample is free.

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
    min_distance: float = 0.0,
    place: Callable[..., Tuple[Any, float, bool]] = place_agent_at_dist_from_pos,
) -> Tuple[Any, float, bool]:
    """Where the robot should stand to reach ``target``: a free navmesh point
    within ``distance`` (habitat-lab's sampler, facing the target), at least
    ``min_distance`` from it (horizontally) where one of ``attempts`` samples
    is; else any free sample; else, when none of its ``attempts`` samples is
    free, the closest navmesh point.

    Returns:
        ``(position, angle, failed)`` as ``place`` returns them.
    """
    if min_distance > 0.0 and distance != CLOSEST_POINT:
        for _ in range(attempts):
            start, angle, failed = place(target, 0.0, distance, sim, 1, True, agent)
            offset = np.asarray(start, dtype=np.float64) - np.asarray(target, dtype=np.float64)
            if not failed and np.hypot(offset[0], offset[2]) >= min_distance:
                return start, angle, failed
    start, angle, failed = place(target, 0.0, distance, sim, attempts, True, agent)
    if failed and distance != CLOSEST_POINT:
        start, angle, failed = place(target, 0.0, CLOSEST_POINT, sim, attempts, True, agent)
    return start, angle, failed


@registry.register_task_action
class HabVerOracleNavAction(OracleNavAction):
    """``OracleNavAction`` that keeps ``spawn_min_dist_to_obj`` from its target
    where it can and falls back to the closest navmesh point."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._spawn_min_distance = self._min_distance()

    def _min_distance(self) -> float:
        """``spawn_min_dist_to_obj`` (0 where the config is habitat-lab's
        ``OracleNavActionConfig``, which lacks it), checked against the maximum."""
        low = float(self._config.get("spawn_min_dist_to_obj", 0.0))
        high = float(self._config.spawn_max_dist_to_obj)
        if low < 0.0 or (high != CLOSEST_POINT and low >= high):
            raise ValueError(
                f"habitat.task.actions.oracle_nav_action.spawn_min_dist_to_obj={low}: must "
                f"be at least 0 and below spawn_max_dist_to_obj ({high})"
            )
        return low

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
            self._spawn_min_distance,
        )
        self._targets[nav_to_target_idx] = (np.array(start), target)
        return self._targets[nav_to_target_idx]
