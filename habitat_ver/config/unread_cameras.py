"""Render only what the policy reads.

A habitat task renders every camera of ``habitat.simulator.agents.*.sim_sensors``
each step, whether or not the policy looks at it.  On a CPU (habitat-sim's
llvmpipe) that rendering is most of a physics-only skill's step: HAB pick with
its 128x128 head depth camera stepped at 210 steps/s on one env, at 654 with no
camera and ``concur_render`` off.

A policy class says which image observations it reads under a config with a
classmethod ``image_keys_read(config)`` (a list, or None: every one;
``VERPolicy`` answers with ``habitat_baselines.ver_policy.visual_keys``).
:func:`without_unread_cameras` drops the cameras the run's policies do not
read, their keys from ``habitat.gym.obs_keys``, and habitat-lab's concurrent
rendering when no camera is left (habitat-lab's ``concur_render`` needs a
renderer: without a sensor it fails in ``start_draw_jobs``).  Evaluation
videos keep their camera: upstream's evaluator adds
``habitat_baselines.eval.extra_sim_sensors`` on top.  A policy that does not
say (upstream's, the hierarchical TP-SRL policy) keeps every camera.
"""

from typing import Any, List, Optional, Set

from habitat.config import read_write
from omegaconf import OmegaConf

from habitat_ver.common.log_once import log_once


def read_cameras(config: Any) -> Optional[Set[str]]:
    """The observation keys of the images the run's policies read, or None
    when one of them does not say (or reads every image)."""
    from habitat_baselines.common.baseline_registry import baseline_registry

    policies = OmegaConf.select(config, "habitat_baselines.rl.policy", default=None)
    if not policies:
        return None
    read: Set[str] = set()
    for policy in policies.values():
        cls = baseline_registry.get_policy(str(policy.get("name")))
        keys = getattr(cls, "image_keys_read", lambda _config: None)(config)
        if keys is None:
            return None
        read.update(keys)
    return read


def unread_cameras(config: Any, read: Optional[Set[str]]) -> List[str]:
    """``agent.sensor`` names of the cameras whose observations are not in
    ``read`` (:func:`read_cameras`; None: every camera is read)."""
    agents = OmegaConf.select(config, "habitat.simulator.agents", default=None)
    if read is None or not agents:
        return []
    return [
        f"{agent_name}.{name}"
        for agent_name, agent in agents.items()
        for name, sensor in (agent.get("sim_sensors") or {}).items()
        if str(sensor.get("uuid")) not in read
    ]


def without_unread_cameras(config: Any) -> Any:
    """``config`` (a copy) without the cameras the policy does not read, and
    without concurrent rendering when none is left; ``config`` itself when
    every camera is read or the policy does not say what it reads."""
    read = read_cameras(config)
    dropped = unread_cameras(config, read)
    if not dropped:
        return config
    config = config.copy()
    simulator = config.habitat.simulator
    uuids = set()
    with read_write(config):
        for name in dropped:
            agent_name, sensor_name = name.split(".", 1)
            sensors = simulator.agents[agent_name].sim_sensors
            uuids.add(str(sensors[sensor_name].uuid))
            del sensors[sensor_name]
        obs_keys = config.habitat.gym.get("obs_keys")
        if obs_keys is not None:
            config.habitat.gym.obs_keys = [k for k in obs_keys if str(k) not in uuids]
        left = sum(len(agent.get("sim_sensors") or {}) for agent in simulator.agents.values())
        concurrent = bool(simulator.get("concur_render", False)) and left == 0
        if concurrent:
            simulator.concur_render = False
    log_once(
        f"the policy reads the images {sorted(read or [])}, none of "
        f"{sorted(uuids)}, so {', '.join(sorted(dropped))} "
        f"{'is' if len(dropped) == 1 else 'are'} not rendered"
        + (" and habitat.simulator.concur_render is off" if concurrent else "")
    )
    return config
