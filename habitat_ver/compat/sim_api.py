"""The habitat-sim names the installed habitat-lab calls and habitat-sim 0.3.3 lacks.

The only habitat-lab that imports on Python 3.11 (PyPI's 0.3.3 nightlies) was
written against a newer habitat-sim than the 0.3.3 release: its articulated
agents and rearrangement tasks call ``Simulator.sensors``,
``Simulator.get_sensor(name)`` and ``Sensor.sensor_object``, which 0.3.3
spells ``Simulator._sensors``, ``Simulator._sensors[name]`` and
``Sensor._sensor_object``.  Every rearrangement env stops on these.  (Its
``DebugVisualizer`` also imports ``habitat_sim.sensors.sensor_wrapper``,
absent from 0.3.3, but only when it renders, which our episode generator
never asks it to: :mod:`habitat_ver.tools.make_hab_dataset`.)

:func:`bridge_sim_api` adds each missing name as an alias of what 0.3.3 has,
and nothing where the installed habitat-sim already has it (a matching
habitat-sim is left untouched).  It runs where habitat-lab may build a
simulator: in every env worker (:func:`habitat_ver.envs.builder.build_env`),
at trainer start and in :mod:`habitat_ver.tools.make_hab_dataset`.
"""

from typing import Any, Dict, List


def _sensors(sim: Any) -> Dict[str, Any]:
    # 0.3.3: the default agent's sensors, by uuid.
    return sim._sensors


def _get_sensor(sim: Any, name: str) -> Any:
    return sim._sensors[name]


def _sensor_object(sensor: Any) -> Any:
    return sensor._sensor_object


def bridge_sim_api() -> List[str]:
    """Add the aliases the installed habitat-sim lacks (idempotent).

    Returns:
        The names added by this call (empty when habitat-sim has them all,
        when they were added before, or in sim-free mode, where no simulator
        is ever built).
    """
    from habitat_ver.compat.sim_free import habitat_sim_available

    if not habitat_sim_available():
        return []
    from habitat_sim.simulator import Sensor, Simulator

    added = []
    if not hasattr(Simulator, "sensors"):
        Simulator.sensors = property(_sensors)
        added.append("Simulator.sensors")
    if not hasattr(Simulator, "get_sensor"):
        Simulator.get_sensor = _get_sensor
        added.append("Simulator.get_sensor")
    if not hasattr(Sensor, "sensor_object"):
        Sensor.sensor_object = property(_sensor_object)
        added.append("Sensor.sensor_object")
    return added
