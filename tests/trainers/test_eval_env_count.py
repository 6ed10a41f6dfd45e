"""Evaluation with several environments.

Fewer scenes than environments (one env per scene):

Upstream's trainer asks the env factory for one env per scene at evaluation,
so a single-scene task configured for 2 envs evaluates on 1; upstream's
evaluator sizes its recurrent states from ``habitat_baselines.num_environments``
and a recurrent policy then got a batch of 1 observation with 2 hidden states
(the PointNav-on-simple_room failure).  Sim-free: CartPole with one named scene.

Episodes ending on the same step in several envs: habitat's evaluator keys
episodes by (scene_id, episode_id), which every gym env numbered alike.
"""

from pathlib import Path

import pytest

from habitat_ver.config.compose import get_config
from habitat_ver.envs import factory
from habitat_ver.run import execute_exp

from .conftest import run_overrides, tensorboard_scalars

GRU = ["habitat_baselines.rl.ddppo.rnn_type=GRU"]


@pytest.mark.parametrize("trainer", ["ddppo", "ver"])
def test_recurrent_policy_evaluates_one_env_per_scene(trainer, out_dir, monkeypatch):
    config_name = f"gym/{trainer}_cartpole"
    execute_exp(get_config(config_name, run_overrides(out_dir, 1) + GRU), "train")
    # One scene for 2 envs: the factory builds a single env for evaluation.
    monkeypatch.setattr(factory, "_scenes_of", lambda config: ["only_scene"])
    eval_config = get_config(
        config_name,
        run_overrides(out_dir, num_envs=2)
        + GRU
        + [
            f"habitat_baselines.eval_ckpt_path_dir={out_dir}/checkpoints/latest.pth",
            "habitat_baselines.test_episode_count=3",
            "habitat_baselines.evaluate=True",
        ],
    )
    execute_exp(eval_config, "eval")
    (reward,) = tensorboard_scalars(out_dir / "tb")["eval_reward/average_reward"]
    # CartPole pays 1 per step; episodes last between 8 and 500 steps.
    assert 8 <= reward <= 500


def test_episodes_that_end_together_in_several_envs_are_told_apart(out_dir, monkeypatch):
    # CutAt3CartPole-v0 (tests/system/faulty_envs.py, imported by the env
    # workers too) ends every episode by gym's time limit at step 3, in all 4
    # envs on the same step.  Before each env named its episodes apart, the 4
    # endings were one episode evaluated 4 times: "Expected 8 episodes, got 3".
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "system"))
    cut_envs = [
        "habitat.env_task_gym_dependencies=[habitat_ver.envs,faulty_envs]",
        "habitat_baselines.embedded_env.scenarios=[CutAt3CartPole-v0]",
    ]
    execute_exp(
        get_config("gym/ddppo_cartpole", run_overrides(out_dir, 1, num_envs=4) + cut_envs),
        "train",
    )
    eval_config = get_config(
        "gym/ddppo_cartpole",
        run_overrides(out_dir, num_envs=4)
        + cut_envs
        + [
            f"habitat_baselines.eval_ckpt_path_dir={out_dir}/checkpoints/latest.pth",
            "habitat_baselines.test_episode_count=8",
            "habitat_baselines.evaluate=True",
        ],
    )
    execute_exp(eval_config, "eval")
    scalars = tensorboard_scalars(out_dir / "tb")
    # 3 steps paying 1 each; CartPole cannot fall within 3 steps.
    assert scalars["eval_reward/average_reward"] == [3.0]
