"""VideoEvaluator: upstream's evaluator drawing our frames while it runs."""

import os
from collections import OrderedDict

import numpy as np
import pytest
from gym import spaces
from omegaconf import OmegaConf

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_baselines.rl.ppo import habitat_evaluator
from habitat_baselines.rl.ppo.habitat_evaluator import HabitatEvaluator

from habitat_ver.common.video_frame import PANEL_WIDTH
from habitat_ver.policies.agent_config import policy_observation_space, video_camera_keys
from habitat_ver.trainers import video_evaluator as ve


def test_upstream_evaluator_still_builds_frames_through_the_replaced_names():
    # The seam: upstream's evaluate_agent looks these up in its module at each call.
    called = set(HabitatEvaluator.evaluate_agent.__code__.co_names)
    assert set(ve.REPLACED) <= called
    assert all(callable(getattr(habitat_evaluator, name)) for name in ve.REPLACED)


def test_the_policy_hears_of_a_pause_of_env_0_alone(monkeypatch):
    # Upstream's evaluator calls on_envs_pause only `if any(envs_to_pause)`.
    assert "pause_envs" in HabitatEvaluator.evaluate_agent.__code__.co_names
    paused, told = [], []

    def upstream_pause(envs_to_pause, *rest):
        paused.append(list(envs_to_pause))
        return rest

    monkeypatch.setattr(habitat_evaluator, "pause_envs", upstream_pause)
    agent = type("Agent", (), {})()
    agent.actor_critic = type("Policy", (), {"on_envs_pause": lambda self, e: told.append(e)})()
    with ve.policy_told_of_every_pause(agent):
        assert habitat_evaluator.pause_envs([0], "envs", "hidden") == ("envs", "hidden")
        habitat_evaluator.pause_envs([], "envs")
        habitat_evaluator.pause_envs([0, 2], "envs")  # upstream tells the policy itself
    assert paused == [[0], [], [0, 2]] and told == [[0]]
    assert habitat_evaluator.pause_envs is upstream_pause


def test_the_episodes_averaged_are_counted_by_upstreams_progress_bar():
    # Upstream's evaluator ticks tqdm.tqdm once per episode it averages.
    assert "tqdm" in HabitatEvaluator.evaluate_agent.__code__.co_names
    original = habitat_evaluator.tqdm
    with ve.episodes_counted() as counted:
        bar = habitat_evaluator.tqdm.tqdm(total=2, disable=True)
        bar.update()
        bar.update()
        bar.update()  # a third env ended on the same step
        bar.close()
    assert counted == [3] and habitat_evaluator.tqdm is original


def test_frames_are_ours_while_evaluating_and_upstreams_after():
    originals = {name: getattr(habitat_evaluator, name) for name in ve.REPLACED}
    third = np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    observation = {"head_depth": np.zeros((128, 128, 1), np.float32), "third_rgb": third}
    with ve.frames_beside_metrics(["third_rgb"]):
        frame = habitat_evaluator.observations_to_image(observation, {"pddl_success": 1.0})
        assert frame.shape == (256, 256 + PANEL_WIDTH, 3)
        assert np.array_equal(frame[:, :256], third)
        assert habitat_evaluator.overlay_frame(frame, {"pddl_success": 1.0}) is frame
    assert {name: getattr(habitat_evaluator, name) for name in ve.REPLACED} == originals
    with pytest.raises(RuntimeError), ve.frames_beside_metrics([]):
        raise RuntimeError("an evaluation that fails")
    assert {name: getattr(habitat_evaluator, name) for name in ve.REPLACED} == originals


def test_the_video_is_renamed_into_place_whole(tmp_path):
    frames = [np.full((64, 96, 3), 10 * i, dtype=np.uint8) for i in range(5)]
    with ve.frames_beside_metrics([]):
        name = habitat_evaluator.generate_video(
            video_option=["disk"],
            video_dir=str(tmp_path / "video"),
            images=frames,
            episode_id="3_1",
            checkpoint_idx=0,
            metrics={"pddl_success": 1.0},
            fps=10,
            tb_writer=None,
            keys_to_include_in_name=["pddl_success"],
        )
    # Upstream's name, no temporary folder left beside it.
    assert name == "episode=3_1-ckpt=0-pddl_success=1.00"
    assert os.listdir(tmp_path / "video") == [f"{name}.mp4"]


def _config(extra=True, agents=("main_agent",)):
    sensors = {"third_rgb_sensor": {"uuid": "third_rgb", "width": 512}} if extra else {}
    return OmegaConf.create(
        {
            "habitat_baselines": {"eval": {"extra_sim_sensors": sensors}},
            "habitat": {"simulator": {"agents_order": list(agents)}},
        }
    )


def test_the_policy_never_sees_the_video_camera():
    box = spaces.Box(0, 255, (512, 512, 3), np.uint8)
    depth = spaces.Box(0.0, 1.0, (128, 128, 1), np.float32)
    # In this order, not sorted: the policy's image channels follow it.
    space = spaces.Dict(
        OrderedDict([("head_depth", depth), ("third_rgb", box), ("agent_0_third_rgb", box)])
    )
    kept = policy_observation_space(_config(), space).spaces
    assert list(kept) == ["head_depth", "agent_0_third_rgb"] and kept["head_depth"] is depth
    two = _config(agents=("agent_0", "agent_1"))
    assert video_camera_keys(two) == ["third_rgb", "agent_0_third_rgb", "agent_1_third_rgb"]
    assert list(policy_observation_space(two, space).spaces) == ["head_depth"]
    assert policy_observation_space(_config(extra=False), space) is space
