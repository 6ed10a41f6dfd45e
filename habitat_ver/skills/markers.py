"""Every handle's position and joint state, as one lab sensor for TP-SRL.

The CPU profile's open/close skills find the handle they pull by
``marker_rel_pos`` (the handle in the end effector's frame) and the drawers
also read ``marker_js_no_vel`` (how far the drawer is open).  habitat-lab's
sensors of those names report the one marker its articulated-object tasks
name (``task.get_use_marker()``); a TP-SRL task opens several, one per plan
step, and has none.

:class:`VERMarkersSensor` (observation ``ver_markers``) reports every marker
of :data:`HAB_MARKERS` (or ``markers`` of its config) at once, a row of four
values each: the marker's position in the end effector's frame and its joint
position.  The skill picks its row by the plan step's marker argument
(``open_cab(cab_push_point_5, ...)``) and rebuilds the two inputs it was
trained on (:class:`~habitat_ver.skills.art_obj.VERArtObjSkill`).
"""

from dataclasses import dataclass, field
from typing import Any, List, Sequence

import numpy as np
from gym import spaces
from habitat.config.default_structured_configs import LabSensorConfig
from habitat.core.simulator import Sensor, SensorTypes
from habitat.tasks.rearrange.utils import UsesArticulatedAgentInterface

UUID = "ver_markers"
# Its config in habitat-lab's sensor group, as hab/set_table's defaults name it:
# ``- /habitat/task/lab_sensors@habitat.task.lab_sensors.ver_markers_sensor: ver_markers_sensor``.
CONFIG_NAME = "ver_markers_sensor"
# The markers of HAB's episodes (habitat-lab's rearrange generator, ReplicaCAD's
# kitchen counter drawers and fridge door), in the order their rows come.
HAB_MARKERS = (
    "cab_push_point_4",
    "cab_push_point_5",
    "cab_push_point_6",
    "cab_push_point_7",
    "fridge_push_point",
)
# Per marker: x, y, z in the end effector's frame, then the joint position.
ROW = 4
POSITION = slice(0, 3)
JOINT = slice(3, 4)


@dataclass
class VERMarkersSensorConfig(LabSensorConfig):
    type: str = "VERMarkersSensor"
    markers: List[str] = field(default_factory=lambda: list(HAB_MARKERS))


class MissingMarkerError(ValueError):
    """A marker the sensor reports is not in the episode."""


def marker_rows(names: Sequence[str], present: Any, ee_inverse: Any) -> np.ndarray:
    """``[len(names), 4]`` float32: each marker in the end effector's frame and
    its joint position.

    Args:
        names: the markers to report, in row order.
        present: the episode's markers by name (``RearrangeSim.get_all_markers()``).
        ee_inverse: the inverse of the end effector's transform (a Magnum
            ``Matrix4``, or anything with ``transform_point``).
    """
    missing = [n for n in names if n not in present]
    if missing:
        raise MissingMarkerError(
            f"{UUID} sensor: markers {missing} are not in the episode; it has "
            f"{sorted(present)} (set habitat.task.lab_sensors.{CONFIG_NAME}.markers)"
        )
    rows = np.empty((len(names), ROW), dtype=np.float32)
    for i, name in enumerate(names):
        marker = present[name]
        rows[i, POSITION] = np.asarray(ee_inverse.transform_point(marker.get_current_position()))
        rows[i, JOINT] = marker.get_targ_js()
    return rows


class VERMarkersSensor(UsesArticulatedAgentInterface, Sensor):
    """Every configured marker relative to the end effector, with its joint
    position: ``[4 * len(markers)]``."""

    cls_uuid = UUID

    def __init__(self, *args: Any, sim: Any, config: Any, task: Any, **kwargs: Any):
        self._sim = sim
        # A config given as habitat-lab's plain LabSensorConfig (type only) reports HAB's.
        self._names = list(config.get("markers", HAB_MARKERS))
        if not self._names:
            raise ValueError(
                f"habitat.task.lab_sensors.{CONFIG_NAME}.markers is empty: name the "
                f"markers to report (HAB's: {list(HAB_MARKERS)})"
            )
        super().__init__(*args, sim=sim, config=config, task=task, **kwargs)

    def _get_uuid(self, *args: Any, **kwargs: Any) -> str:
        return self.cls_uuid

    def _get_sensor_type(self, *args: Any, **kwargs: Any) -> SensorTypes:
        return SensorTypes.TENSOR

    def _get_observation_space(self, *args: Any, **kwargs: Any) -> spaces.Box:
        bound = np.finfo(np.float32).max
        return spaces.Box(-bound, bound, (ROW * len(self._names),), np.float32)

    def get_observation(self, *args: Any, **kwargs: Any) -> np.ndarray:
        agent = self._sim.get_agent_data(self.agent_id).articulated_agent
        rows = marker_rows(
            self._names, self._sim.get_all_markers(), agent.ee_transform().inverted()
        )
        return rows.reshape(-1)
