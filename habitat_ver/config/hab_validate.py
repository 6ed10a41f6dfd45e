"""Checking HAB configs against habitat-lab's registries, without a simulator.

Sim-free mode cannot build habitat-lab's environments, but every sensor and
action class computes its gym space from its config alone.  This module
builds those classes from the registry with a stand-in simulator that has
only what their constructors read (one agent) and a stand-in task that
reports the number of targets, and asks them for their spaces — so the spaces
are exactly the ones the configured sensors and actions define:

* :func:`observation_space_of` / :func:`action_space_of`: a config's spaces as
  the policy sees them (``habitat.gym.obs_keys`` applied; habitat's
  ``ActionSpace``);
* :func:`check_registered`: every task, action, controller, sensor and
  measure type named exists, and every ``habitat.gym.obs_keys`` entry is
  produced by a configured sensor.

Every check collects all problems and raises one :class:`HabConfigError`
naming the keys, the values and what is allowed.
:func:`habitat_ver.skills.eval_check.check_hab_eval` builds on these to check
a ``hab/*`` config's skills against its spaces.
"""

import os.path as osp
from typing import Any, Dict, List

import gym.spaces as spaces
import yaml
from habitat.config.default import get_full_habitat_config_path
from habitat.core.registry import registry
from habitat.core.spaces import ActionSpace


class HabConfigError(ValueError):
    """A HAB config names something habitat-lab lacks, or its parts do not fit."""


class _SpaceOnlySim:
    """What sensor and action constructors read from the simulator: one agent."""

    def __init__(self, num_agents: int):
        self.agents_mgr = [None] * num_agents


class _SpaceOnlyTask:
    """What multi-target sensors read from the task: the number of targets."""

    def __init__(self, n_targets: int):
        self._n_targets = n_targets

    def get_n_targets(self) -> int:
        return self._n_targets


def n_targets_of(config: Any) -> int:
    """Objects to rearrange: the PDDL problem's movable entities, else 1.

    Single-skill tasks (pick, place, ...) are trained on episodes with one
    target; multi-target sensors then have one target's values.
    """
    task = config.habitat.task
    if task.type != "RearrangePddlTask-v0":
        return 1
    path = osp.join(task.task_spec_base_path, task.task_spec + ".yaml")
    with open(get_full_habitat_config_path(path)) as f:
        problem = yaml.safe_load(f)
    return sum(1 for o in problem["objects"] if o["expr_type"] == "movable_entity_type")


def _sensor_spaces(config: Any) -> Dict[str, spaces.Space]:
    sim = _SpaceOnlySim(len(config.habitat.simulator.agents))
    task = _SpaceOnlyTask(n_targets_of(config))
    produced: Dict[str, spaces.Space] = {}
    for agent in config.habitat.simulator.agents.values():
        for sensor_config in agent.sim_sensors.values():
            sensor = registry.get_sensor(sensor_config.type)(config=sensor_config)
            produced[sensor.uuid] = sensor.observation_space
    for sensor_config in config.habitat.task.lab_sensors.values():
        sensor = registry.get_sensor(sensor_config.type)(sim=sim, config=sensor_config, task=task)
        produced[sensor.uuid] = sensor.observation_space
    return produced


def observation_space_of(config: Any) -> spaces.Dict:
    """The observations a policy gets: sensor spaces, ``habitat.gym.obs_keys`` kept."""
    check_registered(config)
    produced = _sensor_spaces(config)
    keys = config.habitat.gym.obs_keys
    if keys is None:
        keys = list(produced)
    return spaces.Dict({k: produced[k] for k in keys})


def action_space_of(config: Any) -> ActionSpace:
    """habitat's ``ActionSpace`` of ``habitat.task.actions``."""
    check_registered(config)
    sim = _SpaceOnlySim(len(config.habitat.simulator.agents))
    task = _SpaceOnlyTask(n_targets_of(config))
    action_spaces = {}
    for name, action_config in config.habitat.task.actions.items():
        action = registry.get_task_action(action_config.type)(
            config=action_config, sim=sim, name=name, task=task
        )
        action_spaces[name] = action.action_space
    return ActionSpace(action_spaces)


def _missing(kind: str, key: str, name: str, known: List[str]) -> str:
    return f"{key}: {kind} type {name!r} is not registered in habitat-lab; allowed: {known}"


def check_registered(config: Any) -> None:
    """Every type a config names exists, and every gym obs key is produced."""
    mapping = registry.mapping
    problems: List[str] = []
    task = config.habitat.task

    def need(kind: str, key: str, name: str) -> None:
        if name not in mapping[kind]:
            problems.append(_missing(kind, key, name, sorted(mapping[kind])))

    need("task", "habitat.task.type", task.type)
    for name, action in task.actions.items():
        need("task_action", f"habitat.task.actions.{name}.type", action.type)
        for ctrl in ("arm_controller", "grip_controller"):
            if action.get(ctrl):
                need("task_action", f"habitat.task.actions.{name}.{ctrl}", action[ctrl])
    for name, sensor in task.lab_sensors.items():
        need("sensor", f"habitat.task.lab_sensors.{name}.type", sensor.type)
    for name, measure in task.measurements.items():
        need("measure", f"habitat.task.measurements.{name}.type", measure.type)
    for agent_name, agent in config.habitat.simulator.agents.items():
        for name, sensor in agent.sim_sensors.items():
            need(
                "sensor",
                f"habitat.simulator.agents.{agent_name}.sim_sensors.{name}.type",
                sensor.type,
            )
    if not problems and config.habitat.gym.obs_keys is not None:
        produced = sorted(_sensor_spaces(config))
        for key in config.habitat.gym.obs_keys:
            if key not in produced:
                problems.append(
                    f"habitat.gym.obs_keys: {key!r} is produced by no configured "
                    f"sensor; the sensors produce {produced}"
                )
    if problems:
        raise HabConfigError("\n".join(problems))
