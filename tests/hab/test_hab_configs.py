"""The skill and HAB configs validate against habitat-lab's registries."""

import functools

import pytest

from habitat_ver.config.compose import config_names, get_config
from habitat_ver.config.hab_validate import (
    HabConfigError,
    action_space_of,
    check_registered,
    observation_space_of,
)
from habitat_ver.skills.eval_check import check_hab_eval, loaded_skills

SKILLS = ["pick", "place", "nav_to_obj", "open_fridge", "close_fridge", "open_cab", "close_cab"]
SCENARIOS = ["tidy_house", "prepare_groceries", "set_table"]
HAB = [f"hab/{s}{v}" for s in SCENARIOS for v in ("", "_nonav")]
TRAIN = [f"rearrange/ver_{s}" for s in SKILLS] + [
    "rearrange/ver_pick_nonav",
    "rearrange/ver_place_nonav",
]


def test_every_documented_config_exists():
    assert set(HAB + TRAIN) <= set(config_names())


@pytest.mark.parametrize("name", TRAIN)
def test_skill_config_follows_the_paper(name):
    config = get_config(name, ["hab_profile=paper"])
    check_registered(config)
    baselines, habitat = config.habitat_baselines, config.habitat
    assert baselines.trainer_name == "ver"
    assert baselines.rl.policy.main_agent.name == "VERPolicy"
    ppo = baselines.rl.ppo
    # Table A1.
    assert (ppo.lr, ppo.ppo_epoch, ppo.num_mini_batch, ppo.clip_param) == (2.5e-4, 3, 2, 0.2)
    assert (ppo.entropy_coef, ppo.use_adaptive_entropy_pen, ppo.entropy_target_factor) == (
        1e-3,
        True,
        0.0,
    )
    assert (ppo.value_loss_coef, ppo.tau, ppo.gamma, ppo.num_steps) == (0.5, 0.95, 0.99, 128)
    assert not ppo.use_clipped_value_loss and not ppo.use_normalized_advantage
    assert baselines.num_environments == 16 and baselines.total_num_steps == 5e8
    assert habitat.simulator.agents.main_agent.articulated_agent_type == "FetchSuctionRobot"
    assert habitat.simulator.concur_render
    obs = observation_space_of(config)
    assert obs.spaces["head_depth"].shape == (128, 128, 1) and obs.spaces["joint"].shape == (7,)
    actions = habitat.task.actions
    if "arm_action" in actions:
        assert actions.arm_action.arm_controller == "ArmRelPosAction"
        assert actions.arm_action.grip_controller == "SuctionGraspAction"
    assert ("base_velocity" in actions) == (not name.endswith("_nonav"))
    # An arm-only skill spawns within its arm's reach; one that drives, as far
    # as habitat-lab's task default.
    if "spawn_max_dist_to_obj" in habitat.task:
        assert habitat.task.spawn_max_dist_to_obj == (1.0 if name.endswith("_nonav") else 2.0)
    # The task the hab/* configs expect a checkpoint of this skill to be
    # trained on (a checkpoint of another task is refused at start).
    skill = name[len("rearrange/ver_") :].replace("_nonav", "")
    assert _tidy_house_skills()[skill].skill_data.task_type == habitat.task.type


@functools.lru_cache(maxsize=1)
def _tidy_house_skills():
    policy = get_config("hab/tidy_house").habitat_baselines.rl.policy.main_agent
    return policy.hierarchical_policy.defined_skills


def test_nav_skill_has_stop_and_force_penalty():
    config = get_config("rearrange/ver_nav_to_obj")
    assert "rearrange_stop" in config.habitat.task.actions
    assert config.habitat.task.measurements.rearrange_nav_to_obj_reward.force_pen > 0


@pytest.mark.parametrize("name", HAB)
def test_hab_config_validates_and_loads_the_skills_its_plan_needs(name):
    config = get_config(name, ["hab_profile=paper"])
    checked = check_hab_eval(config)
    expected = {"pick", "place"}
    if not name.endswith("_nonav"):
        expected.add("nav_to_obj")
    if name.startswith("hab/set_table"):
        expected |= {"open_cab", "open_fridge"}
    assert set(checked) == expected
    assert "pddl_stage_goals" in config.habitat.task.measurements
    assert f"outputs/{name}/" in config.habitat_baselines.log_file


@pytest.mark.parametrize("name", ["hab/tidy_house", "hab/tidy_house_nonav"])
def test_tidy_house_evaluates_the_cpu_profiles_state_only_skills(name):
    config = get_config(name, ["hab_profile=cpu"])
    assert config.habitat_baselines.rl.ppo.hidden_size == 128
    checked = check_hab_eval(config)
    for train in checked.values():
        assert train.habitat_baselines.rl.ppo.hidden_size == 128
        assert list(train.habitat_baselines.ver_policy.visual_keys) == []


@pytest.mark.parametrize("name", ["hab/set_table", "hab/set_table_nonav"])
def test_set_table_in_the_cpu_profile_gives_the_open_skills_their_handle_from_the_markers(name):
    config = get_config(name, ["hab_profile=cpu"])
    assert "ver_markers" in config.habitat.gym.obs_keys
    checked = check_hab_eval(config)
    assert {"open_cab", "open_fridge"} <= set(checked)
    for key in ("open_cab", "open_fridge"):
        assert "marker_rel_pos" in checked[key].habitat.gym.obs_keys
    assert "marker_js_no_vel" in checked["open_cab"].habitat.gym.obs_keys


def test_set_table_without_the_markers_sensor_names_it_for_each_open_skill():
    keys = [k for k in get_config("hab/set_table_nonav").habitat.gym.obs_keys if k != "ver_markers"]
    config = get_config(
        "hab/set_table_nonav",
        [
            "hab_profile=cpu",
            "~habitat.task.lab_sensors.ver_markers_sensor",
            f"habitat.gym.obs_keys=[{','.join(keys)}]",
        ],
    )
    with pytest.raises(HabConfigError) as error:
        check_hab_eval(config)
    lines = str(error.value).splitlines()
    assert [line.split(": ", 1)[0].rsplit(".", 1)[-1] for line in lines] == [
        "open_cab",
        "open_fridge",
    ]
    assert "reads ['marker_rel_pos', 'marker_js_no_vel'], which the evaluation does not" in lines[0]
    assert "ver_markers_sensor: ver_markers_sensor` in the config's defaults" in lines[0]
    assert "'ver_markers' to habitat.gym.obs_keys" in lines[0]


def test_the_learned_open_config_loads_the_open_skills_alone_with_the_oracle_elsewhere():
    config = get_config("hab/set_table_learned_open", ["hab_profile=cpu"])
    skills = loaded_skills(config)
    learned = {k for k, s in skills.items() if s.skill_name.startswith("VER")}
    assert learned == {"open_cab", "open_fridge"}
    assert skills["pick"].skill_name == "NoopSkillPolicy" and skills["pick"].apply_postconds
    assert skills["nav_to_obj"].skill_name == "OracleNavPolicy"
    assert skills["open_fridge"].skill_data.train_config == "rearrange/ver_open_fridge"
    assert config.habitat.simulator.kinematic_mode is False
    assert config.habitat.dataset.data_path.endswith("/{split}/set_table_10k_1k.json.gz")


def test_the_learned_pick_config_loads_the_pick_alone_with_the_oracle_elsewhere():
    config = get_config("hab/tidy_house_learned_pick")
    skills = loaded_skills(config)
    # The one learned skill (ours, from a checkpoint) is pick.
    assert {k for k, s in skills.items() if s.skill_name.startswith("VER")} == {"pick"}
    assert skills["pick"].skill_name == "VERPickSkill" and not skills["pick"].apply_postconds
    assert skills["nav_to_obj"].skill_name == "OracleNavPolicy"
    assert skills["place"].skill_name == "NoopSkillPolicy" and skills["place"].apply_postconds
    assert "outputs/hab/tidy_house_learned_pick/" in config.habitat_baselines.log_file
    # With physics, as the pick was trained (the oracle config is kinematic).
    assert config.habitat.simulator.kinematic_mode is False
    assert get_config("hab/tidy_house_oracle").habitat.simulator.kinematic_mode is True


# (config, overrides, checker, the error's expected words)
BAD_CONFIGS = {
    "unregistered_sensor_type": (
        "rearrange/ver_pick",
        ["habitat.task.lab_sensors.joint_sensor.type=NoSuchSensor"],
        check_registered,
        r"lab_sensors\.joint_sensor\.type: sensor type 'NoSuchSensor' is not registered",
    ),
    "obs_key_without_sensor": (
        "rearrange/ver_pick",
        ["habitat.gym.obs_keys=[head_depth,joint,nope]"],
        check_registered,
        r"habitat.gym.obs_keys: 'nope' is produced by no configured sensor",
    ),
    "skill_reads_missing_observation": (
        "hab/tidy_house",
        [
            "habitat.gym.obs_keys=[head_depth,joint,is_holding,relative_resting_position,"
            "obj_start_gps_compass,obj_goal_gps_compass,obj_goal_sensor]"
        ],
        check_hab_eval,
        r"defined_skills.pick: skill VERPickSkill reads observations \['obj_start_sensor'\]",
    ),
    "skill_trained_with_physics_in_kinematic_mode": (
        # hab/tidy_house_learned_pick inherited tidy_house_oracle's kinematic
        # mode: its learned pick's arm never moved (0 of 4 first picks).
        "hab/tidy_house",
        ["habitat.simulator.kinematic_mode=True"],
        check_hab_eval,
        r"defined_skills.pick: rearrange/ver_pick trained with "
        r"habitat.simulator.kinematic_mode=False, the evaluation has True",
    ),
    "skill_action_missing_in_evaluation": (
        "hab/tidy_house",
        ["~habitat.task.actions.base_velocity"],
        check_hab_eval,
        r"defined_skills.pick: .*actions \['base_velocity'\]",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_a_bad_config_is_refused_by_name(case):
    name, overrides, check, message = BAD_CONFIGS[case]
    with pytest.raises(HabConfigError, match=message):
        # The paper's recipe, whatever this machine's CUDA (hab_profile=auto).
        check(get_config(name, ["hab_profile=paper", *overrides]))


def test_evaluation_action_space_is_arm_base_stop():
    spaces_ = action_space_of(get_config("hab/tidy_house"))
    assert list(spaces_.spaces) == ["arm_action", "base_velocity", "rearrange_stop"]


@pytest.mark.parametrize(
    "name", TRAIN + ["rearrange/ddppo_pick"] + HAB + [f"hab/{s}_oracle" for s in SCENARIOS]
)
def test_skills_train_on_train_arrangements_and_everything_evaluates_on_val(name):
    # make_hab_dataset puts the train arrangements' episodes in train/ and the
    # val arrangements' in val/ (disjoint): the split a config reads decides.
    config = get_config(name, ["hab_data=generated"])
    assert "{split}" in config.habitat.dataset.data_path
    assert config.habitat_baselines.eval.split == "val"
    if name.startswith("rearrange/"):
        assert config.habitat.dataset.split == "train"
        assert config.habitat_baselines.evaluate is False
    else:
        assert config.habitat_baselines.evaluate is True
