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
"""

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
