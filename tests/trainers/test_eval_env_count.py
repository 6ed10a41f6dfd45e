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

import io
import logging
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


def _env_count_recording_policy():
    """A CompactPolicy that records the env count of the config it is built from."""
    from habitat_baselines.common.baseline_registry import baseline_registry

    from habitat_ver.policies.compact_policy import CompactPolicy

    existing = baseline_registry.get_policy("TestEnvCountPolicy")
    if existing is not None:
        return existing

    @baseline_registry.register_policy(name="TestEnvCountPolicy")
    class EnvCountPolicy(CompactPolicy):
        built_for: list = []

        @classmethod
        def from_config(cls, config, *args, **kwargs):
            cls.built_for.append(config.habitat_baselines.num_environments)
            return super().from_config(config, *args, **kwargs)

    return EnvCountPolicy


def test_the_policy_is_sized_for_the_envs_evaluation_built(out_dir, monkeypatch):
    # hab/* evaluate with the command line's config (load_resume_state_config
    # false, no checkpoint of their own): the policy was built from a copy of
    # it still saying 4 envs while one env per scene was built, and upstream's
    # HierarchicalPolicy sized its planner from that ("IndexError: index 1 is
    # out of bounds for dimension 0 with size 1" in fixed_policy.py).
    policy = _env_count_recording_policy()
    policy.built_for.clear()
    monkeypatch.setattr(factory, "_scenes_of", lambda config: ["only_scene"])
    config = get_config(
        "gym/ddppo_cartpole",
        run_overrides(out_dir, num_envs=4)
        + GRU
        + [
            "habitat_baselines.rl.policy.main_agent.name=TestEnvCountPolicy",
            "habitat_baselines.evaluate=True",
            "habitat_baselines.eval.should_load_ckpt=False",
            "habitat_baselines.load_resume_state_config=False",
            "habitat_baselines.test_episode_count=4",  # no fewer than the envs
        ],
    )
    execute_exp(config, "eval")
    assert policy.built_for == [1]
    log = (out_dir / "train.log").read_text()
    warned = [line for line in log.splitlines() if "one environment per scene" in line]
    assert len(warned) == 1, warned
    assert warned[0].endswith(
        "habitat_ver: habitat_baselines.num_environments=4, but the data has 1 scene(s) and "
        "evaluation runs one environment per scene: evaluating with 1 environment(s)"
    )


@pytest.fixture
def habitat_log():
    """What habitat's logger prints during the test."""
    from habitat import logger

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    yield stream
    logger.removeHandler(handler)


@pytest.mark.parametrize("trainer", ["ddppo", "ver"])
def test_training_builds_every_env_on_fewer_scenes_with_one_warning(
    trainer, out_dir, monkeypatch, habitat_log
):
    monkeypatch.setattr(factory, "_scenes_of", lambda config: ["only_scene"])
    ran = execute_exp(
        get_config(f"gym/{trainer}_cartpole", run_overrides(out_dir, 1, num_envs=3)), "train"
    )
    assert ran.num_steps_done == 3 * 16  # 3 envs x 16 steps
    warned = [line for line in habitat_log.getvalue().splitlines() if "scene(s)" in line]
    assert warned == [
        "habitat_ver: 3 environments on 1 scene(s): every environment runs all of them"
    ], warned
