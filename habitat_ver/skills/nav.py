"""The navigation skill of TP-SRL with stop masking (``VERNavSkill``).

VER paper, appendix B: the navigation skill has a dedicated stop action (its
training task ``rearrange/ver_nav_to_obj`` has ``rearrange_stop``), and at
evaluation its stop is masked while the target is more than
``skill_data.max_stop_distance`` metres (2 by default) away
(:func:`~habitat_ver.skills.stop_mask.mask_stop`).

The skill's goal input (``skill_data.goal_key``, habitat-lab's
``goal_to_agent_gps_compass`` in training) is filled per environment with the
current target's polar ``[rho, -phi]`` from ``obj_start_gps_compass`` (an
object to fetch) or ``obj_goal_gps_compass`` (where to put it), two values per
target.  Upstream's ``NavSkillPolicy`` copies the whole multi-target vector
into that two-value key, which only fits single-target tasks, and needs an
``AddVirtualKeys`` observation transform; here the key is built directly, so
no transform is configured.

With ``skill_data.geodesic_stop_mask: true`` the distance that masks stop is
the navmesh geodesic one from :mod:`habitat_ver.skills.geodesic`'s sensors
(``ver_obj_start_geodesic`` / ``ver_obj_goal_geodesic``) instead of the polar
sensors' straight line.
"""

from typing import Dict, List

import gym.spaces as spaces
import torch
from habitat.tasks.rearrange.rearrange_sensors import (
    TargetGoalGpsCompassSensor,
    TargetStartGpsCompassSensor,
)
from habitat.tasks.rearrange.sub_tasks.nav_to_obj_sensors import (
    NavGoalPointGoalSensor,
)
from habitat_baselines.common.tensor_dict import TensorDict
from habitat_baselines.rl.hrl.skills.nav import NavSkillPolicy
from habitat_baselines.rl.hrl.skills.nn_skill import truncate_obs_space
from torch import Tensor

from habitat_ver.skills.geodesic import TargetGoalGeodesicSensor, TargetStartGeodesicSensor
from habitat_ver.skills.loading import VERSkillLoader
from habitat_ver.skills.stop_mask import (
    DEFAULT_MAX_STOP_DISTANCE,
    mask_stop,
    polar_distance,
)

START_KEY = TargetStartGpsCompassSensor.cls_uuid
GOAL_KEY = TargetGoalGpsCompassSensor.cls_uuid
GEODESIC_START_KEY = TargetStartGeodesicSensor.cls_uuid
GEODESIC_GOAL_KEY = TargetGoalGeodesicSensor.cls_uuid
# Values per target in habitat-lab's GPS+compass sensors: [rho, -phi].
POLAR_DIM = 2


def _goal_key(config) -> str:
    return config.skill_data.get("goal_key", NavGoalPointGoalSensor.cls_uuid)


def max_stop_distance_of(config) -> float:
    """``skill_data.max_stop_distance`` (metres), checked to be positive."""
    value = float(config.skill_data.get("max_stop_distance", DEFAULT_MAX_STOP_DISTANCE))
    if value <= 0:
        raise ValueError(
            f"defined_skills.<nav skill>.skill_data.max_stop_distance={value} must be > 0 (metres)"
        )
    return value


class VERNavSkill(VERSkillLoader, NavSkillPolicy):
    """Navigation skill with a goal input built per target and stop masking.

    Attributes:
        num_masked_stops: stops suppressed so far because the target was too far.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._goal_key = _goal_key(self._config)
        self._max_stop_distance = max_stop_distance_of(self._config)
        self._geodesic = bool(self._config.skill_data.get("geodesic_stop_mask", False))
        self.num_masked_stops = 0

    @classmethod
    def skill_observation_space(
        cls, config, observation_space: spaces.Dict, obs_keys: List[str]
    ) -> spaces.Dict:
        goal_key = _goal_key(config)
        if goal_key not in obs_keys:
            raise ValueError(
                f"skill_data.goal_key={goal_key!r} is not among the navigation "
                f"skill's training observations {list(obs_keys)}"
            )
        missing = [k for k in (START_KEY, GOAL_KEY) if k not in observation_space.spaces]
        if missing:
            raise ValueError(
                f"the navigation skill needs observations {missing}: add "
                "target_start_gps_compass_sensor / target_goal_gps_compass_sensor "
                "to habitat.task.lab_sensors and habitat.gym.obs_keys"
            )
        others = super().skill_observation_space(
            config, observation_space, [k for k in obs_keys if k != goal_key]
        )
        selected: Dict[str, spaces.Space] = dict(others.spaces)
        selected[goal_key] = truncate_obs_space(observation_space.spaces[START_KEY], POLAR_DIM)
        return spaces.Dict(selected)

    @property
    def required_obs_keys(self) -> List[str]:
        drop = {self._goal_key, NavGoalPointGoalSensor.cls_uuid}
        keys = [k for k in super().required_obs_keys if k not in drop]
        keys += [START_KEY, GOAL_KEY]
        if self._geodesic:
            keys += [GEODESIC_START_KEY, GEODESIC_GOAL_KEY]
        return list(dict.fromkeys(keys))

    def target_polar(self, observations, cur_batch_idx: List[int]) -> Tensor:
        """The current target's ``[rho, -phi]`` for each env.  ``[B, 2]``."""
        rows = []
        for i, env_i in enumerate(cur_batch_idx):
            args = self._cur_skill_args[env_i]
            source = GOAL_KEY if args.is_target else START_KEY
            rows.append(observations[source][i].view(-1, POLAR_DIM)[args.obj_idx])
        return torch.stack(rows)

    def target_distance(self, observations, cur_batch_idx: List[int]) -> Tensor:
        """Metres to the current target for each env (geodesic or straight).  ``[B]``."""
        if not self._geodesic:
            return polar_distance(self.target_polar(observations, cur_batch_idx))
        rows = []
        for i, env_i in enumerate(cur_batch_idx):
            args = self._cur_skill_args[env_i]
            source = GEODESIC_GOAL_KEY if args.is_target else GEODESIC_START_KEY
            rows.append(observations[source][i].view(-1)[args.obj_idx])
        return torch.stack(rows)

    def _get_filtered_obs(self, observations, cur_batch_idx) -> TensorDict:
        filtered = TensorDict(
            {k: observations[k] for k in self._filtered_obs_space.spaces if k != self._goal_key}
        )
        filtered[self._goal_key] = self.target_polar(observations, cur_batch_idx)
        return filtered

    def _internal_act(
        self,
        observations,
        rnn_hidden_states,
        prev_actions,
        masks,
        cur_batch_idx,
        deterministic=False,
    ):
        action_data = super()._internal_act(
            observations,
            rnn_hidden_states,
            prev_actions,
            masks,
            cur_batch_idx,
            deterministic,
        )
        actions = action_data.actions
        distance = self.target_distance(observations, cur_batch_idx)
        stop, was_masked = mask_stop(
            actions[:, self._stop_action_idx],
            distance.to(actions.device, actions.dtype),
            self._max_stop_distance,
        )
        actions[:, self._stop_action_idx] = stop
        self._did_want_done[cur_batch_idx] = stop.to(self._did_want_done.device)
        self.num_masked_stops += int(was_masked.sum())
        return action_data
