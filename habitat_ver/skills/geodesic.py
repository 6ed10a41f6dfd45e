"""Navmesh geodesic distances to the rearrangement targets, as lab sensors.

The navigation skill's stop is masked while its target is farther than
``skill_data.max_stop_distance`` (VER paper, appendix B: 2 m).  By default the
distance is ``rho`` of habitat-lab's polar goal sensors, the straight line
through walls and furniture.  With ``skill_data.geodesic_stop_mask: true`` the
skill reads these sensors instead: the shortest walkable path on the scene's
navmesh (habitat-sim's ``PathFinder``), from the robot's base to each target's
start (``ver_obj_start_geodesic``) or goal (``ver_obj_goal_geodesic``)
position.  Add them to ``habitat.task.lab_sensors`` and
``habitat.gym.obs_keys`` of the evaluation config (docs/HAB.md).
"""

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from gym import spaces
from habitat.core.simulator import Sensor, SensorTypes
from habitat.tasks.rearrange.utils import UsesArticulatedAgentInterface

# Reported for a target with no walkable path from the robot (never stops there).
UNREACHABLE = np.inf


def geodesic_distances(pathfinder: Any, source: ArrayLike, targets: np.ndarray) -> np.ndarray:
    """Navmesh shortest-path length from ``source`` to each target.

    Args:
        pathfinder: a loaded ``habitat_sim.nav.PathFinder``.
        source: start position ``[3]`` (metres, world frame).
        targets: target positions ``[K, 3]``.

    Returns:
        ``[K]`` float32 metres; :data:`UNREACHABLE` where no path exists.
        Both ends are snapped to the navmesh (a target on a table is reached
        from the floor below it).
    """
    import habitat_sim  # only reached with the real simulator

    start = pathfinder.snap_point(np.asarray(source, dtype=np.float32))
    out = np.full(len(targets), UNREACHABLE, dtype=np.float32)
    for i, target in enumerate(np.asarray(targets, dtype=np.float32).reshape(-1, 3)):
        path = habitat_sim.ShortestPath()
        path.requested_start = start
        path.requested_end = pathfinder.snap_point(target)
        if pathfinder.find_path(path) and np.isfinite(path.geodesic_distance):
            out[i] = path.geodesic_distance
    return out


class _TargetGeodesicSensor(UsesArticulatedAgentInterface, Sensor):
    """Geodesic distance from the robot's base to every target: ``[n_targets]``."""

    cls_uuid = ""

    def __init__(self, *args: Any, sim: Any, task: Any, **kwargs: Any):
        self._sim = sim
        self._task = task
        super().__init__(*args, sim=sim, task=task, **kwargs)

    def _get_uuid(self, *args: Any, **kwargs: Any) -> str:
        return self.cls_uuid

    def _get_sensor_type(self, *args: Any, **kwargs: Any) -> SensorTypes:
        return SensorTypes.TENSOR

    def _get_observation_space(self, *args: Any, **kwargs: Any) -> spaces.Box:
        return spaces.Box(0.0, np.inf, (self._task.get_n_targets(),), np.float32)

    def _target_positions(self) -> np.ndarray:
        raise NotImplementedError

    def get_observation(self, *args: Any, **kwargs: Any) -> np.ndarray:
        agent = self._sim.get_agent_data(self.agent_id).articulated_agent
        return geodesic_distances(
            self._sim.pathfinder, np.array(agent.base_pos), self._target_positions()
        )


class TargetStartGeodesicSensor(_TargetGeodesicSensor):
    """Geodesic distance to each target object where it starts."""

    cls_uuid = "ver_obj_start_geodesic"

    def _target_positions(self) -> np.ndarray:
        return self._sim.get_target_objs_start()


class TargetGoalGeodesicSensor(_TargetGeodesicSensor):
    """Geodesic distance to each target object's goal position."""

    cls_uuid = "ver_obj_goal_geodesic"

    def _target_positions(self) -> np.ndarray:
        return self._sim.get_targets()[1]
