"""habitat-sim renders after habitat-baselines (and so triton) is imported
(:mod:`habitat_ver.compat.native_libs`)."""

import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGE_CANDIDATES = [
    os.path.join(
        REPO, "..", "shared", "habitat-sim", "data", "test_assets", "scenes", "simple_room.glb"
    ),
    os.path.join(
        REPO,
        "..",
        "..",
        "shared",
        "habitat-sim",
        "data",
        "test_assets",
        "scenes",
        "simple_room.glb",
    ),
]
STAGE = next((os.path.abspath(p) for p in STAGE_CANDIDATES if os.path.exists(p)), None)


@pytest.mark.sim
@pytest.mark.skipif(
    STAGE is None, reason="habitat-sim's test assets (../shared/habitat-sim/data) not found"
)
def test_depth_renders_after_habitat_baselines_import():
    # Without habitat_ver.compat.native_libs the first GL context aborts the
    # process: "LLVM ERROR: Option 'default' already exists!" (rc -6).
    code = textwrap.dedent(f"""
        import habitat_ver, habitat_baselines, habitat_sim
        backend = habitat_sim.SimulatorConfiguration()
        backend.scene_id = {STAGE!r}
        backend.gpu_device_id = -1
        spec = habitat_sim.CameraSensorSpec()
        spec.uuid, spec.sensor_type = "depth", habitat_sim.SensorType.DEPTH
        spec.resolution = [32, 32]
        spec.position = [0.0, 1.5, 0.0]
        agent = habitat_sim.agent.AgentConfiguration()
        agent.sensor_specifications = [spec]
        sim = habitat_sim.Simulator(habitat_sim.Configuration(backend, [agent]))
        depth = sim.get_sensor_observations()["depth"]
        print("DEPTH", depth.shape, int((depth > 0).sum()))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("DEPTH")][0]
    shape, nonzero = line.split(")")
    assert shape == "DEPTH (32, 32" and int(nonzero) > 0
