"""A ``hab/*`` evaluation config checked against the skills it loads.

For each loaded skill, without a simulator: the observations its policy reads
exist at evaluation and have the training shapes, and its action space is the
part of the evaluation's that habitat-lab's gym wrapper gave it in training
(the spaces come from :mod:`habitat_ver.config.hab_validate`).  All problems
are collected into one :class:`~habitat_ver.config.hab_validate.HabConfigError`.
"""

from typing import Any, Dict, List

import gym.spaces as spaces
import numpy as np
from habitat.gym.gym_wrapper import create_action_space

from habitat_ver.config.compose import get_config
from habitat_ver.config.hab_profile import PROFILE_KEY, profile_of
from habitat_ver.config.hab_validate import (
    HabConfigError,
    action_space_of,
    check_registered,
    observation_space_of,
)
from habitat_ver.skills.loading import skill_action_space
from habitat_ver.skills.registry import SKILLS


def _same_box(a: spaces.Box, b: spaces.Box) -> bool:
    return a.shape == b.shape and np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high)


def _same_profile(config: Any) -> List[str]:
    """The override that composes a skill's training config with the
    evaluation's recipe (``hab_profile``), when it names one."""
    profile = profile_of(config)
    return [] if profile is None else [f"{PROFILE_KEY}={profile}"]


def loaded_skills(config: Any, agent: str = "main_agent") -> Dict[str, Any]:
    """``defined_skills`` minus ``ignore_skills`` of a ``hab/*`` config."""
    hierarchical = config.habitat_baselines.rl.policy[agent].hierarchical_policy
    return {
        k: v for k, v in hierarchical.defined_skills.items() if k not in hierarchical.ignore_skills
    }


def check_hab_eval(config: Any, agent: str = "main_agent") -> Dict[str, Any]:
    """Check that every loaded neural skill fits the evaluation's spaces.

    A skill's training config is ``skill_data.train_config`` (a name in our
    tree).  Skills without one (wait, reset_arm) are upstream's scripted skills.

    Returns:
        ``{skill key: training config}`` of the neural skills checked.
    """
    obs_space = observation_space_of(config)
    full_actions = action_space_of(config)
    hidden = config.habitat_baselines.rl.ppo.hidden_size
    problems: List[str] = []
    checked: Dict[str, Any] = {}
    for key, skill in loaded_skills(config, agent).items():
        where = f"habitat_baselines.rl.policy.{agent}.hierarchical_policy.defined_skills.{key}"
        try:
            cls = SKILLS.get(skill.skill_name)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        train_name = skill.skill_data.get("train_config")
        if train_name is None:
            continue
        train = get_config(train_name, _same_profile(config))
        checked[key] = train
        try:
            check_registered(train)
            train_obs = observation_space_of(train)
            seen = cls.skill_observation_space(skill, obs_space, list(train.habitat.gym.obs_keys))
            for k, space in train_obs.spaces.items():
                if space.shape != seen.spaces[k].shape:
                    problems.append(
                        f"{where}: observation {k!r} has shape {seen.spaces[k].shape} at "
                        f"evaluation but {space.shape} in {train_name}"
                    )
            skill_actions = skill_action_space(train, full_actions)
        except (ValueError, KeyError) as error:
            problems.append(f"{where}: {error}")
            continue
        trained = create_action_space(action_space_of(train))
        given = create_action_space(skill_actions)
        if not _same_box(trained, given):
            problems.append(
                f"{where}: the evaluation gives actions {given} but {train_name} "
                f"trained with {trained}"
            )
        keys = list(full_actions.spaces)
        positions = [keys.index(k) for k in skill_actions.spaces]
        if positions != list(range(positions[0], positions[0] + len(positions))):
            problems.append(
                f"{where}: actions {list(skill_actions.spaces)} are not contiguous "
                f"in the evaluation's action order {keys}"
            )
        trained_kinematic = bool(train.habitat.simulator.kinematic_mode)
        if trained_kinematic != bool(config.habitat.simulator.kinematic_mode):
            # habitat-lab's kinematic mode makes the robot kinematic and removes
            # its motors: ArmRelPosAction then does nothing, and a suction grasp
            # sees no contacts.
            problems.append(
                f"{where}: {train_name} trained with habitat.simulator.kinematic_mode="
                f"{trained_kinematic}, the evaluation has {not trained_kinematic} (in "
                "kinematic mode the robot's arm motors are removed: a skill trained "
                "with physics cannot move its arm)"
            )
        if train.habitat_baselines.rl.ppo.hidden_size != hidden:
            problems.append(
                f"{where}: {train_name} has rl.ppo.hidden_size="
                f"{train.habitat_baselines.rl.ppo.hidden_size}, the evaluation {hidden}"
            )
    if problems:
        raise HabConfigError("\n".join(problems))
    return checked
