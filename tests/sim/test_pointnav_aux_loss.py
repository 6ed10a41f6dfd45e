"""CPC|A on the real simulator, attached with the override the issue tried.

``+habitat_baselines/rl/auxiliary_losses@habitat_baselines.rl.auxiliary_losses.cpca=cpca``
on ``pointnav/ver_simple_room`` ended with ``Could not find
'pointnav/habitat_baselines/rl/auxiliary_losses/cpca'``; now it trains, and
CompactPolicy (which ignored ``rl.auxiliary_losses``) builds the loss from its
RGB-D embedding.
"""

import math

import pytest

from tests.trainers.conftest import tensorboard_scalars

from .conftest import REPO, dataset_overrides, run_real

pytestmark = pytest.mark.sim

UPSTREAM_OVERRIDE = (
    "+habitat_baselines/rl/auxiliary_losses@habitat_baselines.rl.auxiliary_losses.cpca=cpca"
)


def test_the_upstream_override_trains_cpca_under_ver_on_pointnav(pointnav_data, tmp_path):
    done = run_real(
        [
            "-m",
            "habitat_baselines.run",
            "--config-name=pointnav/ver_simple_room",
            UPSTREAM_OVERRIDE,
            *dataset_overrides(pointnav_data),
            "habitat_baselines.num_updates=3",
            "habitat_baselines.total_num_steps=-1",
            "habitat_baselines.num_environments=2",
            "habitat_baselines.rl.ppo.num_steps=16",
            "habitat_baselines.rl.ppo.hidden_size=32",
            "habitat_baselines.log_interval=1",
            "habitat.environment.max_episode_steps=20",
            f"habitat_baselines.checkpoint_folder={tmp_path / 'ckpt'}",
            f"habitat_baselines.tensorboard_dir={tmp_path / 'tb'}",
            f"habitat_baselines.log_file={tmp_path / 'train.log'}",
            f"hydra.run.dir={tmp_path / 'hydra'}",
        ],
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    losses = tensorboard_scalars(tmp_path / "tb")["learner/aux/cpca/loss"]
    # An update's loss is 0 when its batch holds no step with a future inside
    # the same episode (a random policy calls STOP every fourth step or so).
    assert len(losses) == 3 and all(math.isfinite(v) and v >= 0 for v in losses)
    assert sum(losses) > 0
    assert "learner/aux/cpca/loss" in (tmp_path / "train.log").read_text()
