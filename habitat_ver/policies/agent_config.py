"""Finding an agent's policy section, and what it sees, in a habitat-baselines config."""

from collections import OrderedDict
from typing import Any, List, Optional

from gym import spaces
from omegaconf import OmegaConf


def agent_policy_config(config: Any, agent_name: Optional[str]) -> Optional[Any]:
    """``habitat_baselines.rl.policy[agent_name]``; the only section if there is
    one and ``agent_name`` is not given (single-agent runs); else None."""
    policies = config.habitat_baselines.rl.policy
    if agent_name in policies:
        return policies[agent_name]
    if len(policies) == 1:
        return next(iter(policies.values()))
    return None


def video_camera_keys(config: Any) -> List[str]:
    """The observation keys of the cameras added for evaluation videos only
    (``habitat_baselines.eval.extra_sim_sensors``; upstream names them
    ``<agent>_<uuid>`` when there are several agents)."""
    extra = OmegaConf.select(config, "habitat_baselines.eval.extra_sim_sensors", default=None)
    uuids = [sensor.uuid for sensor in (extra or {}).values()]
    agents = list(OmegaConf.select(config, "habitat.simulator.agents_order", default=None) or [])
    return uuids + [f"{agent}_{uuid}" for agent in agents for uuid in uuids]


def policy_observation_space(config: Any, observation_space: spaces.Dict) -> spaces.Dict:
    """``observation_space`` less the video cameras (:func:`video_camera_keys`):
    a policy never sees them, so it is the same network with or without a
    video (as upstream's ``PointNavResNetPolicy`` filters them)."""
    hidden = set(video_camera_keys(config)) & set(observation_space.spaces)
    if not hidden:
        return observation_space
    kept = [(k, s) for k, s in observation_space.spaces.items() if k not in hidden]
    return spaces.Dict(OrderedDict(kept))  # in the given order (a plain dict is sorted)
