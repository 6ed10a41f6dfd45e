"""TP-SRL's hierarchical policy resolving skills through our registry.

Registered as ``VERHierarchicalPolicy``.  Everything is upstream's
``HierarchicalPolicy`` (skill batching, hidden-state split, termination,
PDDL problem) except the two places where upstream turns a config name into
a class with ``eval`` in its own module: ``_create_skills`` and
``_get_hl_policy_cls``.  Both look names up in
:mod:`habitat_ver.skills.registry`, which holds upstream's skills and
planners and ours (``VERPickSkill``, ``VERPlaceSkill``, ``VERArtObjSkill``,
``VERNavSkill``, ``VERFixedHighLevelPolicy``); an unknown name is one error
listing the allowed names.

It also fixes upstream's bookkeeping of paused envs (:meth:`on_envs_pause`),
which any evaluation with more than one env meets: each env evaluates its own
scenes' episodes and is paused when they are done.
"""

from typing import Any, List, Sequence

import numpy as np
import torch
from habitat_baselines.rl.hrl.hierarchical_policy import HierarchicalPolicy

from habitat_ver.skills.loading import VERSkillLoader
from habitat_ver.skills.registry import HIGH_LEVEL_POLICIES, SKILLS


class VERHierarchicalPolicy(HierarchicalPolicy):
    """Upstream's ``HierarchicalPolicy`` with registry-resolved skill classes."""

    def _create_skills(self, skills, observation_space, action_space, full_config):
        # Upstream's loop, with the class looked up in our registry instead of
        # `eval` (upstream has no hook between the name and the class).
        skill_i = 0
        for skill_key, skill_config in skills.items():
            cls = SKILLS.get(skill_config.skill_name)
            extra = {"skill_key": skill_key} if issubclass(cls, VERSkillLoader) else {}
            skill_policy = cls.from_config(
                skill_config,
                observation_space,
                action_space,
                self._num_envs,
                full_config,
                **extra,
            )
            skill_policy.set_pddl_problem(self._pddl)
            action_names = skill_config.pddl_action_names or [skill_key]
            for action_name in action_names:
                self._name_to_idx[action_name] = skill_i
                self._idx_to_name[skill_i] = action_name
                self._skills[skill_i] = skill_policy
                skill_i += 1

    def _get_hl_policy_cls(self, config):
        return HIGH_LEVEL_POLICIES.get(config.hierarchical_policy.high_level_policy.name)

    @property
    def skills_by_name(self):
        """PDDL action name -> the skill object running it."""
        return {name: self._skills[i] for name, i in self._name_to_idx.items()}

    def on_envs_pause(self, envs_to_pause: Sequence[int]) -> None:
        """Drop the paused envs' rows from the policy's and the skills' state.

        ``envs_to_pause`` are rows of the current batch (the evaluator's
        envs left running).  Upstream marks them in its mask of the original
        envs as if they were original env ids, so after a first pause it drops
        the wrong env (or none: "index 1 is out of bounds for dimension 0 with
        size 1" at the next step); and its skills keep their per-env state
        (skill step, arguments, targets) by row, which no one moves up when a
        row above goes.  Here each row is mapped to its env, and every skill's
        per-env state (:func:`compact_rows`) follows the rows kept.
        """
        if len(envs_to_pause) == 0:
            return
        rows = torch.nonzero(self._active_envs).view(-1)  # env id of each current row
        keep = torch.ones(len(rows), dtype=torch.bool)
        keep[list(envs_to_pause)] = False
        active = self._active_envs.clone()
        active[rows[~keep]] = False
        self._cur_call_high_level = self._cur_call_high_level[keep]  # type: ignore[assignment]
        self._cur_skills = self._cur_skills[keep.numpy()]
        self._active_envs = active  # type: ignore[assignment]
        if not keep.any():
            return  # the evaluation is over (upstream's planner refuses no envs at all)
        self._high_level_policy.filter_envs(keep)  # type: ignore[operator]
        kept_rows = torch.nonzero(keep).view(-1).tolist()
        for skill in {id(s): s for s in self._skills.values()}.values():
            compact_rows(skill, kept_rows, self._num_envs)


def compact_rows(holder: Any, kept_rows: List[int], num_envs: int) -> None:
    """Move the per-env state of ``holder`` (a skill) up to the rows kept.

    Per-env state is what upstream's skills index by batch row: tensors,
    arrays and lists of ``num_envs`` entries, and dicts keyed by row.  Row
    ``i`` gets what row ``kept_rows[i]`` had; the rows after them keep what
    they had (no env reads them).
    """
    for name, value in list(vars(holder).items()):
        if isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim > 0:
            if value.shape[0] == num_envs:
                moved: Any = value.clone() if isinstance(value, torch.Tensor) else value.copy()
                moved[: len(kept_rows)] = value[kept_rows]
                setattr(holder, name, moved)
        elif isinstance(value, list) and len(value) == num_envs:
            setattr(holder, name, [value[row] for row in kept_rows] + value[len(kept_rows) :])
        elif (
            isinstance(value, dict)
            and value
            and all(isinstance(key, int) and 0 <= key < num_envs for key in value)
        ):
            setattr(
                holder,
                name,
                {new: value[old] for new, old in enumerate(kept_rows) if old in value},
            )
