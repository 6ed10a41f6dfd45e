"""VERHierarchicalPolicy builds from hab/tidy_house with our skills and acts."""

import pytest
import torch
from habitat.gym.gym_wrapper import create_action_space
from habitat_baselines.common.baseline_registry import baseline_registry
from habitat_baselines.common.tensor_dict import TensorDict

from habitat_ver.config.compose import get_config
from habitat_ver.config.hab_validate import action_space_of, observation_space_of
from habitat_ver.skills.hierarchical_policy import VERHierarchicalPolicy
from habitat_ver.skills.loading import SkillCheckpointError
from habitat_ver.skills.nav import VERNavSkill
from habitat_ver.skills.pick import VERPickSkill
from habitat_ver.skills.place import VERPlaceSkill

from .conftest import hab_overrides

NUM_ENVS = 3
# habitat's order of the evaluation's flat action vector: arm_action (7 joints +
# grip), base_velocity (2), rearrange_stop (1).
ARM, GRIP, BASE, STOP = slice(0, 7), 7, slice(8, 10), 10


def build(name, skill_checkpoints):
    config = get_config(
        name, hab_overrides(skill_checkpoints) + [f"habitat_baselines.num_environments={NUM_ENVS}"]
    )
    obs_space = observation_space_of(config)
    orig_actions = action_space_of(config)
    cls = baseline_registry.get_policy(config.habitat_baselines.rl.policy.main_agent.name)
    policy = cls.from_config(config, obs_space, create_action_space(orig_actions), orig_actions)
    return policy, obs_space


def random_observations(obs_space, is_holding):
    obs = TensorDict({k: torch.rand(NUM_ENVS, *s.shape) for k, s in obs_space.spaces.items()})
    obs["is_holding"] = torch.full((NUM_ENVS, 1), float(is_holding))
    return obs


def act(policy, obs, masks):
    hidden = torch.zeros(NUM_ENVS, policy.num_recurrent_layers, policy.recurrent_hidden_size)
    prev = torch.zeros(NUM_ENVS, 11)
    with torch.no_grad():
        return policy.act(obs, hidden, prev, masks)


def test_builds_with_our_skills_for_every_plan_action(skill_checkpoints):
    policy, _ = build("hab/tidy_house", skill_checkpoints)
    assert isinstance(policy, VERHierarchicalPolicy)
    skills = policy.skills_by_name
    assert isinstance(skills["pick"], VERPickSkill)
    assert isinstance(skills["place"], VERPlaceSkill)
    assert isinstance(skills["nav"], VERNavSkill)
    assert skills["nav_to_receptacle"] is skills["nav"]
    # The art-object skills are ignored on Tidy House: no checkpoint was needed.
    assert "open_cab" not in skills


def test_forward_runs_the_nav_skill_first_on_tidy_house(skill_checkpoints):
    policy, obs_space = build("hab/tidy_house", skill_checkpoints)
    obs = random_observations(obs_space, is_holding=0)
    out = act(policy, obs, torch.zeros(NUM_ENVS, 1, dtype=torch.bool))
    actions = out.take_actions
    assert actions.shape == (NUM_ENVS, 11)
    assert out.rnn_hidden_states.shape == (NUM_ENVS, policy.num_recurrent_layers, 32)
    # The plan starts with nav(any_targets|0): only the base moves, the arm is
    # still, the gripper keeps releasing (not holding) and the episode goes on.
    assert torch.count_nonzero(actions[:, BASE]) == 2 * NUM_ENVS
    assert torch.all(actions[:, ARM] == 0)
    assert torch.all(actions[:, GRIP] == -1)
    assert torch.all(actions[:, STOP] == 0)
    assert [policy._idx_to_name[i] for i in policy._cur_skills] == ["nav"] * NUM_ENVS


def test_forward_runs_pick_first_without_the_nav_skill(skill_checkpoints):
    policy, obs_space = build("hab/tidy_house_nonav", skill_checkpoints)
    assert "nav" not in policy.skills_by_name
    obs = random_observations(obs_space, is_holding=0)
    actions = act(policy, obs, torch.zeros(NUM_ENVS, 1, dtype=torch.bool)).take_actions
    assert actions.shape == (NUM_ENVS, 11)
    assert [policy._idx_to_name[i] for i in policy._cur_skills] == ["pick"] * NUM_ENVS
    # Pick drives the arm and the base (trained with base movement).
    assert torch.count_nonzero(actions[:, ARM]) == 7 * NUM_ENVS
    assert torch.count_nonzero(actions[:, BASE]) == 2 * NUM_ENVS
    assert torch.all(actions[:, STOP] == 0)


def test_missing_skill_checkpoint_is_one_clear_error(skill_checkpoints, tmp_path):
    paths = dict(skill_checkpoints, place=tmp_path / "nope.pth")
    # Named by the key it came from (trainers check every skill's before any
    # env starts: tests/hab/test_skill_checkpoints.py).
    with pytest.raises(
        SkillCheckpointError, match=r"^hab_skill_checkpoints\.place='.*nope\.pth': no such file"
    ):
        build("hab/tidy_house", paths)


def test_unknown_skill_class_names_the_allowed_ones(skill_checkpoints):
    config_overrides = [
        "habitat_baselines.rl.policy.main_agent.hierarchical_policy.defined_skills.pick.skill_name=NoSuchSkill"
    ]
    config = get_config("hab/tidy_house", hab_overrides(skill_checkpoints) + config_overrides)
    orig = action_space_of(config)
    with pytest.raises(
        ValueError, match=r"skill_name='NoSuchSkill' is not a known skill; allowed: .*VERPickSkill"
    ):
        VERHierarchicalPolicy.from_config(
            config, observation_space_of(config), create_action_space(orig), orig
        )


def test_paused_envs_leave_the_policy_s_and_the_skills_state_row_by_row(skill_checkpoints):
    # The evaluator pauses envs by their row in the batch of envs still running.
    policy, _ = build("hab/tidy_house", skill_checkpoints)
    nav = policy.skills_by_name["nav"]
    policy._cur_skills[:] = [10, 11, 12]
    nav._cur_skill_step = torch.tensor([5.0, 6.0, 7.0])
    nav._raw_skill_args = ["a", "b", "c"]
    policy._high_level_policy._next_sol_idxs = torch.tensor([1, 2, 3], dtype=torch.int32)
    policy.on_envs_pause([1])  # env 1
    assert policy._active_envs.tolist() == [True, False, True]
    assert policy._cur_skills.tolist() == [10, 12]
    assert nav._cur_skill_step[:2].tolist() == [5.0, 7.0] and nav._raw_skill_args[:2] == ["a", "c"]
    assert policy._high_level_policy._next_sol_idxs.tolist() == [1, 3]
    # Row 1 is now env 2 (upstream dropped env 1 again, i.e. nobody).
    policy.on_envs_pause([1])
    assert policy._active_envs.tolist() == [True, False, False]
    assert policy._cur_skills.tolist() == [10] and policy._cur_call_high_level.shape == (1,)
    assert nav._cur_skill_step[0] == 5.0 and nav._raw_skill_args[0] == "a"
    policy.on_envs_pause([0])
    assert policy._active_envs.tolist() == [False, False, False]
    assert len(policy._cur_skills) == 0
