"""Every skill checkpoint of a hierarchical policy, checked before any env starts.

The policy reads its skills' checkpoints when it is built, after the envs
started, and stops at the first bad one.  :func:`check_skill_checkpoints` reads
all of them at trainer start and reports every problem in one
:class:`~habitat_ver.skills.loading.SkillCheckpointError` line, each named by
the key its path came from (``hab_skill_checkpoints.<skill>`` in our ``hab/*``
configs) and its path:

* empty, no such file, not a readable checkpoint (truncated, corrupt, a text
  file), no weights (:func:`~habitat_ver.skills.loading.read_skill_checkpoint`),
  no training config (and no ``force_config_file``);
* a checkpoint of another skill: trained on another ``habitat.task.type`` than
  the skill's ``skill_data.task_type``, named by the skill whose task it is
  (a pick checkpoint given as ``place``: "a checkpoint of skill `pick`, not
  `place`").

The skills checked are those the policy loads (``defined_skills`` minus
``ignore_skills``) whose class is built from a checkpoint by our constructor
(:class:`~habitat_ver.skills.loading.VERSkillLoader`); oracle and scripted
skills read none.
"""

from typing import Any, Dict, Iterator, List, Optional, Tuple

from omegaconf import OmegaConf

from habitat_ver.skills.loading import (
    SKILL_KEY,
    SkillCheckpointError,
    VERSkillLoader,
    checkpoint_key,
    read_skill_checkpoint,
)
from habitat_ver.skills.registry import SKILLS

TASK_KEY = "habitat.task.type"


def hierarchical_policies(config: Any) -> Iterator[Tuple[str, Any]]:
    """``(agent, hierarchical_policy section)`` of every agent whose policy is
    a registered ``HierarchicalPolicy`` (ours or upstream's)."""
    from habitat_baselines.common.baseline_registry import baseline_registry
    from habitat_baselines.rl.hrl.hierarchical_policy import HierarchicalPolicy

    for agent, policy in config.habitat_baselines.rl.policy.items():
        cls = baseline_registry.get_policy(policy.name)
        if isinstance(cls, type) and issubclass(cls, HierarchicalPolicy):
            yield agent, policy.hierarchical_policy


def neural_skills(hierarchical: Any) -> Dict[str, Any]:
    """The loaded skills that read a checkpoint, by skill key."""
    found = {}
    for key, skill in hierarchical.defined_skills.items():
        if key in hierarchical.ignore_skills:
            continue
        try:
            cls = SKILLS.get(skill.skill_name)
        except ValueError:
            continue  # the policy reports it, naming the allowed skills
        if issubclass(cls, VERSkillLoader):
            found[key] = skill
    return found


def _task_of(checkpoint: Dict[str, Any]) -> Optional[str]:
    config = checkpoint.get("config")
    return None if config is None else OmegaConf.select(config, TASK_KEY)


def _skills_of_task(hierarchical: Any, task: str) -> List[str]:
    """The skill keys whose ``skill_data.task_type`` is ``task`` (loaded or not)."""
    return [
        key
        for key, skill in hierarchical.defined_skills.items()
        if skill.get("skill_data", {}).get("task_type") == task
    ]


def _wrong_skill(
    hierarchical: Any, skill_key: str, skill: Any, checkpoint: Dict[str, Any]
) -> Optional[str]:
    """Why ``checkpoint`` is not one of skill ``skill_key``, or None."""
    expected = skill.get("skill_data", {}).get("task_type")
    trained = _task_of(checkpoint)
    if expected is None or trained is None or trained == expected:
        return None
    owners = _skills_of_task(hierarchical, trained)
    if owners:
        what = f"a checkpoint of skill `{owners[0]}`, not `{skill_key}`"
    else:
        what = f"a checkpoint of a {trained} run, which is none of this config's skills"
    return f"{what} ({TASK_KEY}={trained}; `{skill_key}` is trained on {expected})"


def skill_checkpoint_problems(config: Any) -> List[str]:
    """One line per skill checkpoint that cannot be used, naming its key and path."""
    problems = []
    for agent, hierarchical in hierarchical_policies(config):
        for skill_key, skill in neural_skills(hierarchical).items():
            key = checkpoint_key(skill, skill_key, config, agent)
            path = skill.load_ckpt_file
            try:
                checkpoint = read_skill_checkpoint(path, key)
            except SkillCheckpointError as error:
                problems.extend(error.problems)
                continue
            if checkpoint.get("config") is None and not skill.force_config_file:
                problems.append(
                    f"{key}={path!r}: holds no config; set "
                    f"{SKILL_KEY.replace('<agent>', agent)}.{skill_key}.force_config_file "
                    "to the config the skill was trained with"
                )
                continue
            wrong = _wrong_skill(hierarchical, skill_key, skill, checkpoint)
            if wrong is not None:
                problems.append(f"{key}={path!r}: the file at {path} is {wrong}")
    return problems


def check_skill_checkpoints(config: Any) -> None:
    """Raise one :class:`SkillCheckpointError` naming every skill checkpoint of
    ``config``'s hierarchical policies that cannot be used (none: no error)."""
    problems = skill_checkpoint_problems(config)
    if problems:
        raise SkillCheckpointError(problems)
