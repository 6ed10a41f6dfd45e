"""The skill configs' paper and CPU recipes (habitat_ver/config/hab_profile.py)."""

import pytest

from habitat_ver.config import hab_profile
from habitat_ver.config.compose import get_config
from habitat_ver.config.errors import ConfigError
from habitat_ver.config.hab_validate import observation_space_of
from habitat_ver.config.unread_cameras import without_unread_cameras

# (envs, LSTM width, steps, visual keys) of each recipe.
PAPER = (16, 512, 5e8, None)
CPU = (4, 128, 2e6, [])


def _recipe(config):
    baselines = config.habitat_baselines
    keys = baselines.ver_policy.visual_keys
    return (
        baselines.num_environments,
        baselines.rl.ppo.hidden_size,
        baselines.total_num_steps,
        None if keys is None else list(keys),
    )


@pytest.mark.parametrize(
    "profile, cuda, expected",
    [
        ("auto", False, CPU),
        ("auto", True, PAPER),
        ("paper", False, PAPER),
        ("cpu", True, CPU),
    ],
)
def test_the_profile_picks_the_recipe(monkeypatch, profile, cuda, expected):
    monkeypatch.setattr(hab_profile, "cuda_available", lambda: cuda)
    config = get_config("rearrange/ver_place", [f"hab_profile={profile}"])
    assert _recipe(config) == expected
    resolved = hab_profile.resolved_profile(config)
    assert _recipe(resolved) == expected
    assert "${" not in str(resolved.habitat.task.measurements)


def test_a_key_given_on_the_command_line_wins_over_the_profile():
    config = get_config(
        "rearrange/ver_pick", ["hab_profile=cpu", "habitat_baselines.num_environments=2"]
    )
    assert _recipe(config) == (2, 128, 2e6, [])


def test_an_articulated_skill_on_the_cpu_reads_the_marker_and_needs_no_stop():
    config = without_unread_cameras(
        hab_profile.resolved_profile(get_config("rearrange/ver_close_fridge", ["hab_profile=cpu"]))
    )
    shapes = {k: s.shape for k, s in observation_space_of(config).spaces.items()}
    assert shapes == {
        "marker_rel_pos": (3,),
        "joint": (7,),
        "ee_pos": (3,),
        "is_holding": (1,),
        "relative_resting_position": (3,),
    }
    assert config.habitat.task.measurements.art_obj_success.must_call_stop is False
    paper = get_config("rearrange/ver_close_fridge", ["hab_profile=paper"])
    assert "marker_rel_pos" not in paper.habitat.gym.obs_keys
    assert paper.habitat.task.measurements.art_obj_success.must_call_stop is True


@pytest.mark.parametrize("skill", ["close_cab", "open_cab"])
def test_a_drawer_skill_on_the_cpu_reads_how_far_the_drawer_is_open(skill):
    config = without_unread_cameras(
        hab_profile.resolved_profile(get_config(f"rearrange/ver_{skill}", ["hab_profile=cpu"]))
    )
    shapes = {k: s.shape for k, s in observation_space_of(config).spaces.items()}
    assert shapes["marker_js_no_vel"] == (1,) and shapes["marker_rel_pos"] == (3,)
    dist = config.habitat_baselines.rl.policy.main_agent.action_dist
    assert (dist.use_std_param, dist.log_std_init, dist.max_log_std) == (True, -1.0, 2)
    paper = hab_profile.resolved_profile(
        get_config(f"rearrange/ver_{skill}", ["hab_profile=paper"])
    )
    assert "marker_js_no_vel" not in paper.habitat.gym.obs_keys
    paper_dist = paper.habitat_baselines.rl.policy.main_agent.action_dist
    assert (paper_dist.use_std_param, paper_dist.log_std_init) == (False, 0.0)


def test_close_drawer_on_the_cpu_pays_the_arms_way_back_to_rest_as_habitat_labs_default():
    def rest_reward(profile):
        config = get_config("rearrange/ver_close_cab", [f"hab_profile={profile}"])
        return hab_profile.resolved_profile(config).habitat.task.measurements.art_obj_reward

    # habitat-lab's close skills set 1; its measure's default is 10
    assert rest_reward("paper").ee_dist_reward == 1.0
    assert rest_reward("cpu").ee_dist_reward == 10.0


def test_open_drawer_on_the_cpu_lets_go_of_a_handle_pulled_too_far_as_tp_srl_does():
    def task(name, profile):
        config = get_config(name, [f"hab_profile={profile}"])
        return hab_profile.resolved_profile(config).habitat.task

    def on_violation(t):
        return (t.constraint_violation_ends_episode, t.constraint_violation_drops_object)

    # habitat-lab's open_cab ends the episode; its multi-skill tasks drop the handle
    assert on_violation(task("rearrange/ver_open_cab", "paper")) == (True, False)
    assert on_violation(task("rearrange/ver_open_cab", "cpu")) == (False, True)
    assert on_violation(task("hab/tidy_house_nonav", "cpu")) == (False, True)


def test_an_unknown_profile_is_named_with_the_allowed_ones():
    with pytest.raises(
        ConfigError, match=r"hab_profile='gpu' is not allowed; allowed: auto, paper, cpu"
    ):
        hab_profile.profile_in_effect("gpu")
