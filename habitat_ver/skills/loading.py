"""Building a neural skill from its checkpoint, for habitat-ver's skills.

Upstream's ``NnSkillPolicy.from_config`` reads checkpoints with a plain
``torch.load`` (fails on torch >= 2.6 for files holding an OmegaConf config),
falls back to a ``rearrange/rl_skill.yaml`` the PyPI wheel does not ship when
no checkpoint is given, truncates every ``obs_skill_inputs`` key to 3 values
whatever ``obs_skill_input_dim`` says, and hands the policy habitat's
``ActionSpace`` (with ``EmptySpace`` stop) rather than the flat Box the policy
was trained with.  :class:`VERSkillLoader` replaces that one constructor:

* ``load_ckpt_file`` must name a readable checkpoint, read with
  :func:`~habitat_ver.common.checkpoint.load_checkpoint_file`; otherwise one
  :class:`SkillCheckpointError` naming the key the path came from
  (:func:`checkpoint_key`: ``hab_skill_checkpoints.<skill>`` in our configs).
  A trainer checks every skill's first (:mod:`.checkpoint_check`), before any
  env starts;
* the skill's training config is the checkpoint's ``config``, or the config
  named by ``force_config_file`` (a name in our tree, e.g. ``rearrange/ver_pick``);
* observation keys are the training config's ``habitat.gym.obs_keys``, with
  ``obs_skill_inputs`` keys cut to one target's ``obs_skill_input_dim`` values
  (:meth:`VERSkillLoader.skill_observation_space`, a hook the navigation skill
  extends);
* the policy gets ``create_action_space`` of its actions, exactly what
  habitat's gym wrapper gave it in training.
"""

import os
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import gym.spaces as spaces
from habitat.core.spaces import ActionSpace
from habitat.gym.gym_wrapper import create_action_space
from habitat_baselines.common.baseline_registry import baseline_registry
from habitat_baselines.rl.hrl.skills.nn_skill import truncate_obs_space

from habitat_ver.common.checkpoint import CorruptCheckpointError, load_checkpoint_file
from habitat_ver.config.errors import ConfigError

SKILL_KEY = "habitat_baselines.rl.policy.<agent>.hierarchical_policy.defined_skills"
# The config group our hab/* configs set every skill's load_ckpt_file from.
SKILL_CHECKPOINTS = "hab_skill_checkpoints"
TRAIN_HINT = (
    "train each skill with its rearrange/ver_<skill> config first (docs/HAB.md, "
    "1. Train the skills) or point its key at its checkpoint, e.g. "
    "hab_skill_checkpoints.pick=/path/pick.pth"
)


class SkillCheckpointError(ConfigError):
    """Skill checkpoints that are missing, unreadable or not the skill's.

    Args:
        problems: one per checkpoint, naming the key it was set by and its path.
    """

    def __init__(self, problems: List[str]):
        self.problems = problems
        lead = f"{len(problems)} skill checkpoints cannot be used: " if len(problems) > 1 else ""
        super().__init__(f"{lead}{'; '.join(problems)}; {TRAIN_HINT}")


def skill_training_config(config: Any) -> Optional[Any]:
    """The training config named by ``force_config_file``, or None."""
    if not config.force_config_file:
        return None
    from habitat_ver.config.compose import config_names, get_config

    name = config.force_config_file
    if name not in config_names():
        raise ValueError(
            f"{SKILL_KEY}.{config.skill_name}.force_config_file={name!r} is not a "
            f"config of habitat-ver's tree; allowed: {config_names()}"
        )
    return get_config(name)


def checkpoint_key(
    skill_config: Any, skill_key: str, full_config: Any = None, agent: str = "<agent>"
) -> str:
    """The key a skill's ``load_ckpt_file`` was set by: ``hab_skill_checkpoints.<skill>``
    when ``full_config`` has it with the same path (our ``hab/*`` configs
    interpolate it), else ``load_ckpt_file``'s own (of ``agent``'s policy)."""
    group = None if full_config is None else full_config.get(SKILL_CHECKPOINTS)
    if group is not None and group.get(skill_key) == skill_config.load_ckpt_file:
        return f"{SKILL_CHECKPOINTS}.{skill_key}"
    skills = SKILL_KEY.replace("<agent>", agent)
    return f"{skills}.{skill_key}.load_ckpt_file"


def checkpoint_problem(path: str, key: str) -> Optional[str]:
    """What keeps ``path`` (set by ``key``) from being a skill's checkpoint
    without reading it (empty, no such file), or None."""
    if not path:
        return f"{key} is empty: set it to the skill's checkpoint"
    if not os.path.isfile(path):
        return f"{key}={path!r}: no such file"
    return None


def read_skill_checkpoint(path: str, key: str) -> Dict[str, Any]:
    """The skill checkpoint at ``path``, set by ``key``.

    Raises:
        SkillCheckpointError: empty, no such file, unreadable (truncated,
            corrupt, not a checkpoint: a text file, say) or without weights;
            the message names ``key`` and ``path``.
    """
    problem = checkpoint_problem(path, key)
    if problem is None:
        try:
            checkpoint = load_checkpoint_file(path)
        except CorruptCheckpointError as error:
            problem = f"{key}={path!r}: not a readable checkpoint ({error.reason})"
        else:
            if "state_dict" in checkpoint:
                return checkpoint
            problem = f"{key}={path!r}: holds no 'state_dict' (not a policy checkpoint)"
    raise SkillCheckpointError([problem])


def action_keys_of(train_config: Any) -> List[str]:
    """The actions a skill was trained with, in habitat's (sorted) order."""
    return sorted(train_config.habitat.task.actions.keys())


def skill_action_space(train_config: Any, full_action_space: ActionSpace) -> ActionSpace:
    """The part of the evaluation's action space the skill controls."""
    missing = [k for k in action_keys_of(train_config) if k not in full_action_space.spaces]
    if missing:
        raise ValueError(
            f"the skill was trained with actions {missing} that the evaluation's "
            f"habitat.task.actions lack; it has {sorted(full_action_space.spaces)}"
        )
    return ActionSpace(OrderedDict((k, full_action_space[k]) for k in action_keys_of(train_config)))


if TYPE_CHECKING:
    # The mixin is only ever combined with an NnSkillPolicy subclass: the type
    # checker sees it as one (its __init__, its from_config contract).
    from habitat_baselines.rl.hrl.skills.nn_skill import NnSkillPolicy as _SkillBase
else:
    _SkillBase = object


class VERSkillLoader(_SkillBase):
    """Mixin giving an upstream ``NnSkillPolicy`` subclass our constructor.

    Put it first in the bases: ``class VERPickSkill(VERSkillLoader, PickSkillPolicy)``.
    """

    @classmethod
    def skill_observation_space(
        cls, config: Any, observation_space: spaces.Dict, obs_keys: List[str]
    ) -> spaces.Dict:
        """The observation space the skill's policy sees at evaluation.

        Args:
            config: the skill's ``defined_skills`` entry.
            observation_space: the evaluation environment's observations.
            obs_keys: the keys the skill was trained on.
        """
        missing = [k for k in obs_keys if k not in observation_space.spaces]
        if missing:
            raise ValueError(
                f"skill {config.skill_name} reads observations {missing} that the "
                "evaluation does not produce; add their sensors and list them in "
                f"habitat.gym.obs_keys (it has {sorted(observation_space.spaces)})"
            )
        selected: Dict[str, spaces.Space] = {k: observation_space.spaces[k] for k in obs_keys}
        for k in config.obs_skill_inputs:
            if k not in selected:
                raise ValueError(
                    f"{SKILL_KEY}.<skill>.obs_skill_inputs names {k!r}, which skill "
                    f"{config.skill_name} does not read; it reads {list(obs_keys)}"
                )
            selected[k] = truncate_obs_space(selected[k], config.obs_skill_input_dim)
        return spaces.Dict(selected)

    # Upstream's skills narrow Policy.from_config (batch_size and full_config
    # required, no **kwargs), as its own SkillPolicy does.
    @classmethod
    def from_config(  # type: ignore[override]
        cls,
        config,
        observation_space,
        action_space,
        batch_size,
        full_config,
        skill_key: Optional[str] = None,
    ):
        """Upstream's skill constructor contract (see the module docstring)."""
        skill_key = skill_key or config.skill_name
        path = config.load_ckpt_file
        checkpoint = read_skill_checkpoint(path, checkpoint_key(config, skill_key, full_config))
        train_config = skill_training_config(config)
        if train_config is None:
            train_config = checkpoint.get("config")
        if train_config is None:
            raise ValueError(
                f"checkpoint {path!r} holds no config; set "
                f"{SKILL_KEY}.{skill_key}.force_config_file to the config the "
                "skill was trained with (e.g. rearrange/ver_pick)"
            )
        filtered_obs_space = cls.skill_observation_space(
            config, observation_space, list(train_config.habitat.gym.obs_keys)
        )
        filtered_action_space = skill_action_space(train_config, action_space)
        policy_cls = baseline_registry.get_policy(config.name)
        if policy_cls is None:
            raise ValueError(
                f"{SKILL_KEY}.{skill_key}.name={config.name!r} is not a registered policy"
            )
        actor_critic = policy_cls.from_config(
            train_config, filtered_obs_space, create_action_space(filtered_action_space)
        )
        try:
            actor_critic.load_state_dict(checkpoint["state_dict"])
        except RuntimeError as error:
            raise ValueError(
                f"checkpoint {path!r} does not fit skill {skill_key}'s policy "
                f"{config.name} built from its training config: {error}"
            ) from error
        skill = cls(
            actor_critic,
            config,
            action_space,
            filtered_obs_space,
            filtered_action_space,
            batch_size,
        )
        skill.on_built(observation_space, full_config)
        return skill

    def on_built(self, observation_space: spaces.Dict, full_config: Any) -> None:
        """Hook for what a skill class takes from the evaluation's observations
        and config once built (none here)."""
