"""Drop-in: habitat-baselines' own DD-PPO PointNav config on the real simulator.

``tests/fixtures/upstream_configs/pointnav/ddppo_pointnav.yaml`` is upstream's
file, unchanged.  Each run goes through upstream's entry point
(``python -m habitat_baselines.run``) and overrides only

* ``trainer_name`` (ours: ``ddppo``, ``ver``, ``appo``);
* the data paths (``data_path``, ``scenes_dir``) and ``content_scenes``: four
  scenes of a dataset generated on habitat-sim's ``simple_room`` stage (one
  copy per scene name), so the config's four envs get one scene each;
* ``gpu_device_id=-1``: render on the CPU (upstream's 0 needs a GPU);
* the run's size (2 updates of ``num_steps=8``; upstream's 2.5e9 steps of
  128-step rollouts take ~7 min an update on 2 CPU cores) and its folders.

Sensors (RGB-D 256x256), policy (PointNavResNetPolicy, ResNet50), PPO
settings, the factory and storage names all stay upstream's.
"""

import ast
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from habitat_ver.common.checkpoint import ResumeStateFiles, load_checkpoint_file

pytestmark = [
    pytest.mark.sim,
    pytest.mark.skipif(
        importlib.util.find_spec("habitat_sim") is None,
        reason="habitat-sim is not installed (`make test` installs ../shared/habitat-sim/*.whl; "
        "elsewhere: conda install habitat-sim -c conda-forge -c aihabitat)",
    ),
]

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_CONFIGS = ROOT / "tests" / "fixtures" / "upstream_configs"
STAGES = ROOT.parent / "shared" / "habitat-sim" / "data" / "test_assets" / "scenes"
SCENES = ["room_a", "room_b", "room_c", "room_d"]
N, T, UPDATES = 4, 8, 2  # N is the upstream config's own num_environments


def _stage_dir():
    import habitat_sim

    for candidate in (
        STAGES,
        Path("/work/shared/habitat-sim/data/test_assets/scenes"),
        Path(habitat_sim.__file__).parents[1] / "data" / "test_assets" / "scenes",
    ):
        if (candidate / "simple_room.glb").is_file():
            return candidate
    pytest.skip("habitat-sim's test stage simple_room.glb is not available")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A PointNav-v1 dataset over four scene names, each a copy of simple_room."""
    from habitat_ver.tools.make_pointnav_dataset import make_dataset

    root = tmp_path_factory.mktemp("pointnav")
    stages = root / "stages"
    stages.mkdir()
    for scene in SCENES:
        shutil.copy(_stage_dir() / "simple_room.glb", stages / f"{scene}.glb")
    return make_dataset(
        [str(stages / f"{s}.glb") for s in SCENES],
        str(root / "data"),
        "rooms",
        {"train": 4, "val": 1},
        1.0,
        3.0,
    )


def _run(trainer_name, dataset, out):
    cmd = [
        sys.executable,
        "-m",
        "habitat_baselines.run",
        f"--config-path={UPSTREAM_CONFIGS}",
        "--config-name=pointnav/ddppo_pointnav",
        f"habitat_baselines.trainer_name={trainer_name}",
        f'habitat.dataset.data_path="{dataset["data_path"]}"',
        f"habitat.dataset.scenes_dir={dataset['scenes_dir']}",
        f"habitat.dataset.content_scenes=[{','.join(SCENES)}]",
        "habitat.simulator.habitat_sim_v0.gpu_device_id=-1",
        f"habitat_baselines.num_updates={UPDATES}",
        "habitat_baselines.total_num_steps=-1",
        f"habitat_baselines.rl.ppo.num_steps={T}",
        "habitat_baselines.log_interval=1",
        f"habitat_baselines.checkpoint_folder={out}/checkpoints",
        f"habitat_baselines.tensorboard_dir={out}/tb",
        f"habitat_baselines.log_file={out}/train.log",
    ]
    # From the repository root: an editable install's hydra_plugins are found there.
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.mark.parametrize("trainer_name", ["ddppo", "ver", "appo"])
def test_upstream_pointnav_config_trains_with_our_trainer(trainer_name, dataset, tmp_path):
    log = _run(trainer_name, dataset, tmp_path)
    # Scenes: upstream's factory was replaced by ours, which dealt one scene
    # to each of the four envs.
    assert "using habitat_ver.envs.factory.VerVectorEnvFactory" in log
    splits = re.findall(r"scenes per environment: (\[\[.*?\]\])", log)
    assert splits, log[-3000:]
    per_env = ast.literal_eval(splits[0])
    assert sorted(sum(per_env, [])) == SCENES and [len(s) for s in per_env] == [1] * N
    # Steps: T per env per update (ver: T*N per rollout; appo: N trajectories of T).
    resume = ResumeStateFiles(str(tmp_path / "checkpoints")).load()
    stats = resume["requeue_stats"]
    assert (stats["num_updates_done"], stats["num_steps_done"]) == (UPDATES, UPDATES * N * T)
    checkpoint = load_checkpoint_file(str(tmp_path / "checkpoints" / "latest.pth"))
    assert checkpoint["extra_state"]["step"] == UPDATES * N * T
    assert checkpoint["config"]["habitat_baselines"]["trainer_name"] == trainer_name
    weights = checkpoint["state_dict"]
    assert any("visual_encoder.backbone" in k for k in weights)  # upstream's ResNet policy
    if trainer_name == "ver":
        assert checkpoint["config"]["habitat_baselines"]["rollout_storage_name"] == "VERStorage"
