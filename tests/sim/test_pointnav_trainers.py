"""ddppo, ver, NoVER and appo on the real simulator through upstream's entry point.

Each trains a few updates of habitat-lab's PointNav task on simple_room
(``python -m habitat_baselines.run --config-name=pointnav/...``), writes
checkpoints, resumes from its resume state, and evaluates a checkpoint
(``habitat_baselines.evaluate=True``) reporting success and SPL.
"""

import re

import pytest
import torch

from .conftest import REPO, VAL_EPISODES, dataset_overrides, run_real

pytestmark = pytest.mark.sim

NUM_ENVS = 2
T = 8
RUNS = {
    "ddppo": ("pointnav/ddppo_simple_room", []),
    "ver": ("pointnav/ver_simple_room", []),
    "nover": ("pointnav/ver_simple_room", ["habitat_baselines.rl.ver.variable_experience=False"]),
    # 2 envs: one per rollout worker, so one env group per worker.
    "appo": (
        "pointnav/appo_simple_room",
        [
            "habitat_baselines.rl.appo.batch_trajectories=2",
            "habitat_baselines.rl.appo.num_env_groups=1",
        ],
    ),
}
_METRIC = re.compile(r"Average episode (success|spl): ([0-9.]+)")


def _overrides(data, out, num_updates):
    return [
        *dataset_overrides(data),
        f"habitat_baselines.num_updates={num_updates}",
        "habitat_baselines.total_num_steps=-1",
        "habitat_baselines.num_checkpoints=2",
        f"habitat_baselines.num_environments={NUM_ENVS}",
        f"habitat_baselines.rl.ppo.num_steps={T}",
        "habitat_baselines.rl.ppo.hidden_size=32",
        "habitat.environment.max_episode_steps=20",
        f"habitat_baselines.checkpoint_folder={out / 'ckpt'}",
        f"habitat_baselines.tensorboard_dir={out / 'tb'}",
        f"habitat_baselines.log_file={out / 'train.log'}",
        f"habitat_baselines.test_episode_count={VAL_EPISODES}",
    ]


def _train(config, extra, data, out, num_updates):
    out_ = run_real(
        [
            "-m",
            "habitat_baselines.run",
            f"--config-name={config}",
            *_overrides(data, out, num_updates),
            *extra,
        ],
        cwd=REPO,
    )
    assert out_.returncode == 0, out_.stderr[-4000:]
    return torch.load(out / "ckpt" / "resume-state.pth", weights_only=False)["requeue_stats"]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_trains_resumes_and_evaluates_on_pointnav(name, pointnav_data, tmp_path):
    config, extra = RUNS[name]
    first = _train(config, extra, pointnav_data, tmp_path, num_updates=2)
    assert first["num_updates_done"] == 2 and first["count_checkpoints"] == 2
    if name in ("ddppo", "nover"):
        assert first["num_steps_done"] == 2 * T * NUM_ENVS
    checkpoints = sorted(p.name for p in (tmp_path / "ckpt").glob("ckpt.*.pth"))
    assert checkpoints == ["ckpt.0.pth", "ckpt.1.pth"]
    # Resume: the same command again finds the finished budget in the resume
    # state and neither trains nor rewrites the checkpoints (a fresh run would).
    mtimes = {p: p.stat().st_mtime_ns for p in (tmp_path / "ckpt").glob("ckpt.*.pth")}
    resumed = _train(config, extra, pointnav_data, tmp_path, num_updates=2)
    assert resumed["num_updates_done"] == 2
    assert resumed["num_steps_done"] == first["num_steps_done"]
    # (habitat-baselines' loop may add a final checkpoint on exit; the ones
    # written by the first run are untouched.)
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes
    evaluated = run_real(
        [
            "-m",
            "habitat_baselines.run",
            f"--config-name={config}",
            *_overrides(pointnav_data, tmp_path, 2),
            *extra,
            "habitat_baselines.evaluate=True",
            f"habitat_baselines.eval_ckpt_path_dir={tmp_path / 'ckpt' / 'ckpt.1.pth'}",
            "habitat_baselines.eval.split=val",
        ],
        cwd=REPO,
    )
    assert evaluated.returncode == 0, evaluated.stderr[-4000:]
    log = (tmp_path / "train.log").read_text() + evaluated.stdout + evaluated.stderr
    metrics = dict((k, float(v)) for k, v in _METRIC.findall(log))
    assert set(metrics) == {"success", "spl"}, log[-3000:]
    assert 0.0 <= metrics["spl"] <= metrics["success"] <= 1.0
    # Every val episode was run (habitat-baselines' evaluation progress bar).
    assert f"| {VAL_EPISODES}/{VAL_EPISODES} [" in evaluated.stderr
