"""Open/close fridge and cabinet skills with a habitat-ver policy (``VERArtObjSkill``).

Upstream's ``ArtObjSkillPolicy`` behaviour (done once the arm left its start
zone and is back at rest with nothing held), built by
:class:`~habitat_ver.skills.loading.VERSkillLoader`, with that state kept per
env.  Upstream keeps the whole batch's arm position from the last time any env
entered the skill, and clears every env's "left the start zone" then; with
several envs each env's test read another's start, and once an env was paused
the shapes no longer matched ("The size of tensor a (3) must match the size
of tensor b (4)").

A skill trained on habitat-lab's single-marker inputs (``marker_rel_pos``,
``marker_js_no_vel``: the CPU profile's) gets them in a TP-SRL task from the
``ver_markers`` sensor (:mod:`habitat_ver.skills.markers`): the row of the
marker the plan step names first (``open_cab(cab_push_point_5, bowl_target|0,
robot_0)``).  Where the evaluation produces those inputs itself (the skill's
own task), they are read as they are.
"""

from typing import Any, Dict, List, NamedTuple

import gym.spaces as spaces
import numpy as np
import torch
from habitat.tasks.rearrange.rearrange_sensors import (
    IsHoldingSensor,
    RelativeRestingPositionSensor,
)
from habitat.tasks.rearrange.sub_tasks.articulated_object_sensors import (
    ArtJointSensorNoVel,
    MarkerRelPosSensor,
)
from habitat_baselines.common.tensor_dict import TensorDict
from habitat_baselines.rl.hrl.skills.art_obj import ArtObjSkillPolicy
from habitat_baselines.rl.hrl.skills.nn_skill import NnSkillPolicy

from habitat_ver.skills import markers
from habitat_ver.skills.loading import VERSkillLoader

_BOUND = np.finfo(np.float32).max
# The single-marker inputs the skill can be given from its marker's row, with
# habitat-lab's spaces for them.
FROM_ROW = {
    MarkerRelPosSensor.cls_uuid: (markers.POSITION, spaces.Box(-_BOUND, _BOUND, (3,), np.float32)),
    ArtJointSensorNoVel.cls_uuid: (markers.JOINT, spaces.Box(0.0, 1.0, (1,), np.float32)),
}
SENSOR_HINT = (
    f"add our markers sensor, `- /habitat/task/lab_sensors@habitat.task.lab_sensors."
    f"{markers.CONFIG_NAME}: {markers.CONFIG_NAME}` in the config's defaults, and "
    f"{markers.UUID!r} to habitat.gym.obs_keys (as hab/set_table)"
)


class ArtObjArgs(NamedTuple):
    """A plan step's arguments: the marker to pull and the target's index."""

    marker: str
    obj_idx: int


def markers_of(full_config: Any) -> List[str]:
    """The markers the evaluation's ``ver_markers`` sensor reports, in row order
    ([] without that sensor)."""
    sensors = full_config.habitat.task.lab_sensors
    found = [s for s in sensors.values() if s.type == markers.VERMarkersSensor.__name__]
    return list(found[0].markers) if found else []


class VERArtObjSkill(VERSkillLoader, ArtObjSkillPolicy):
    """Articulated-object skill loading a ``VERPolicy`` checkpoint."""

    # Set by on_built: the inputs built from the marker rows, and the rows' order.
    _from_row: List[str] = []
    _marker_names: List[str] = []

    @classmethod
    def _built_inputs(cls, observation_space: spaces.Dict, obs_keys: List[str]) -> List[str]:
        return [k for k in obs_keys if k in FROM_ROW and k not in observation_space.spaces]

    @classmethod
    def skill_observation_space(
        cls, config: Any, observation_space: spaces.Dict, obs_keys: List[str]
    ) -> spaces.Dict:
        built = cls._built_inputs(observation_space, obs_keys)
        if built and markers.UUID not in observation_space.spaces:
            raise ValueError(
                f"skill {config.skill_name} reads {built}, which the evaluation does not "
                f"produce; {SENSOR_HINT}"
            )
        others = super().skill_observation_space(
            config, observation_space, [k for k in obs_keys if k not in built]
        )
        selected: Dict[str, spaces.Space] = dict(others.spaces)
        selected.update({k: FROM_ROW[k][1] for k in built})
        return spaces.Dict(selected)

    def on_built(self, observation_space: spaces.Dict, full_config: Any) -> None:
        self._from_row = self._built_inputs(
            observation_space, list(self._filtered_obs_space.spaces)
        )
        self._marker_names = markers_of(full_config)
        # Per env (a row each, moved with the rows when envs are paused): the
        # arm's offset from rest when it entered, and whether it left that zone.
        self._start_rest = torch.zeros(self._batch_size, 3)
        self._left_start = torch.zeros(self._batch_size, dtype=torch.bool)

    def on_enter(
        self, skill_arg, batch_idxs, observations, rnn_hidden_states, prev_actions, skill_name
    ):
        # Upstream's NnSkillPolicy entry; ArtObjSkillPolicy's batch-wide state
        # is replaced by the entering envs' rows.
        result = NnSkillPolicy.on_enter(
            self, skill_arg, batch_idxs, observations, rnn_hidden_states, prev_actions, skill_name
        )
        rest = observations[RelativeRestingPositionSensor.cls_uuid]
        self._start_rest[batch_idxs] = rest[batch_idxs].cpu().float()
        self._left_start[batch_idxs] = False
        return result

    def _is_skill_done(self, observations, rnn_hidden_states, prev_actions, masks, batch_idx):
        rest = observations[RelativeRestingPositionSensor.cls_uuid].cpu().float()
        moved = torch.linalg.vector_norm(rest - self._start_rest[batch_idx], dim=-1)
        self._left_start[batch_idx] |= moved > self._config.start_zone_radius
        at_rest = torch.linalg.vector_norm(rest, dim=-1) < self._config.at_resting_threshold
        holding = observations[IsHoldingSensor.cls_uuid].view(-1).cpu().bool()
        return ~holding & at_rest & self._left_start[batch_idx]

    @property
    def required_obs_keys(self) -> List[str]:
        keys = [k for k in super().required_obs_keys if k not in self._from_row]
        return keys + [markers.UUID] if self._from_row else keys

    def _parse_skill_arg(self, skill_name: str, skill_arg) -> ArtObjArgs:
        # skill_arg: the plan step's arguments, a list (upstream annotates it str).
        marker = skill_arg[0]
        if self._from_row and marker not in self._marker_names:
            raise ValueError(
                f"{skill_name}({', '.join(skill_arg)}): marker {marker!r} is not among "
                f"the {markers.UUID} sensor's markers {self._marker_names} "
                f"(habitat.task.lab_sensors.{markers.CONFIG_NAME}.markers)"
            )
        return ArtObjArgs(marker, super()._parse_skill_arg(skill_name, skill_arg))

    def _get_multi_sensor_index(self, batch_idx: List[int]) -> List[int]:
        return [self._cur_skill_args[i].obj_idx for i in batch_idx]

    def marker_rows(self, observations, cur_batch_idx: List[int]) -> torch.Tensor:
        """Each env's current marker row of ``ver_markers``.  ``[B, 4]``."""
        rows = []
        for i, env_i in enumerate(cur_batch_idx):
            row = self._marker_names.index(self._cur_skill_args[env_i].marker)
            rows.append(observations[markers.UUID][i].view(-1, markers.ROW)[row])
        return torch.stack(rows)

    def _get_filtered_obs(self, observations, cur_batch_idx) -> TensorDict:
        filtered = TensorDict(
            {k: observations[k] for k in self._filtered_obs_space.spaces if k not in self._from_row}
        )
        if self._from_row:
            rows = self.marker_rows(observations, cur_batch_idx)
            for k in self._from_row:
                filtered[k] = rows[:, FROM_ROW[k][0]]
        return filtered
