"""The habitat-sim 0.3.3 aliases habitat-lab's nightly calls: added where
missing, never over a habitat-sim that has them, never in sim-free mode.
(On the real habitat-sim: tests/hab/test_hab_real.py.)"""

import sys
import types

import pytest

from habitat_ver.compat import sim_api, sim_free


def _simulator_module(monkeypatch, **attributes):
    """A stand-in ``habitat_sim.simulator`` with ``Simulator`` and ``Sensor``."""
    module = types.ModuleType("habitat_sim.simulator")
    module.Simulator = type("Simulator", (), dict(attributes.get("simulator", {})))
    module.Sensor = type("Sensor", (), dict(attributes.get("sensor", {})))
    monkeypatch.setitem(sys.modules, "habitat_sim.simulator", module)
    monkeypatch.setattr(sim_free, "habitat_sim_available", lambda: True)
    return module


def test_missing_names_become_aliases_of_0_3_3s(monkeypatch):
    module = _simulator_module(monkeypatch)
    assert sim_api.bridge_sim_api() == [
        "Simulator.sensors",
        "Simulator.get_sensor",
        "Sensor.sensor_object",
    ]
    sim, sensor = module.Simulator(), module.Sensor()
    sim._sensors = {"head_depth": sensor}
    sensor._sensor_object = object()
    assert sim.sensors is sim._sensors
    assert sim.get_sensor("head_depth") is sensor
    assert sensor.sensor_object is sensor._sensor_object
    assert sim_api.bridge_sim_api() == []  # idempotent


def test_a_habitat_sim_that_has_the_names_is_left_alone(monkeypatch):
    def own_get_sensor(self, name):
        return name

    module = _simulator_module(
        monkeypatch,
        simulator={"sensors": property(lambda self: "own"), "get_sensor": own_get_sensor},
        sensor={"sensor_object": property(lambda self: "own")},
    )
    assert sim_api.bridge_sim_api() == []
    assert module.Simulator.get_sensor is own_get_sensor
    assert module.Simulator().sensors == "own" and module.Sensor().sensor_object == "own"


def test_sim_free_mode_patches_nothing(monkeypatch):
    module = _simulator_module(monkeypatch)
    monkeypatch.setattr(sim_free, "habitat_sim_available", lambda: False)
    assert sim_api.bridge_sim_api() == []
    assert not hasattr(module.Simulator, "sensors")


@pytest.mark.parametrize("missing", ["Simulator.sensors", "Sensor.sensor_object"])
def test_each_name_is_added_on_its_own(monkeypatch, missing):
    present = {
        "Simulator.sensors": {
            "simulator": {"get_sensor": lambda s, n: n},
            "sensor": {"sensor_object": 1},
        },
        "Sensor.sensor_object": {"simulator": {"sensors": 1, "get_sensor": lambda s, n: n}},
    }[missing]
    _simulator_module(monkeypatch, **present)
    assert sim_api.bridge_sim_api() == [missing]
