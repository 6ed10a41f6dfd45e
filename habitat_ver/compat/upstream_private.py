"""The private names of habitat-baselines and habitat-lab that habitat-ver uses.

Our trainers reuse upstream's ``PPOTrainer`` loop, its agent manager and its
``VectorEnv``, and so depend on names upstream may rename in any release.
Every one is listed in :data:`UPSTREAM_PRIVATE`, with the releases it was
checked against (:data:`CHECKED_VERSIONS`); ``tests/compat/test_upstream_private.py``
fails on an installed release that lacks one, and when our trainers use an
upstream private name this list lacks.

Three kinds of use:

* ``hook``: an upstream method we override (upstream must keep calling it);
* ``call``: an upstream method we call;
* ``state``: an attribute of upstream's objects we read or set.  Those our
  trainers set to stand in for upstream's own set-up go through
  :func:`adopt_env_pool`; the rest are read where they are used.
"""

from typing import Any, Dict, NamedTuple, Tuple

from habitat_baselines.common.env_spec import EnvironmentSpec

# The releases (as `pip show` reports them) every name below was checked in:
# 0.3.320260507 is a 0.3.3 build of 2026-05-07.
CHECKED_VERSIONS: Dict[str, Tuple[str, ...]] = {
    "habitat-baselines": ("0.3.320260507",),
    "habitat-lab": ("0.3.320260507",),
}

PPO_TRAINER = "habitat_baselines.rl.ppo.ppo_trainer.PPOTrainer"
AGENT_MANAGER = "habitat_baselines.rl.ppo.single_agent_access_mgr.SingleAgentAccessMgr"
VECTOR_ENV = "habitat.core.vector_env.VectorEnv"
READ_WRAPPER = "habitat.core.vector_env._ReadWrapper"


class UpstreamName(NamedTuple):
    """One upstream name we depend on."""

    owner: str  # dotted path of the class that defines it (or a base of it)
    name: str
    kind: str  # "hook", "call" or "state"
    used_in: str  # our modules, under habitat_ver/


UPSTREAM_PRIVATE: Tuple[UpstreamName, ...] = (
    UpstreamName(PPO_TRAINER, "_init_envs", "hook", "trainers/base, ver, appo"),
    UpstreamName(PPO_TRAINER, "_init_train", "hook", "trainers/base, ver, appo"),
    UpstreamName(PPO_TRAINER, "_create_agent", "hook", "trainers/ver"),
    UpstreamName(PPO_TRAINER, "_collect_environment_result", "hook", "trainers/ddppo"),
    UpstreamName(PPO_TRAINER, "_coalesce_post_step", "hook", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_update_agent", "hook", "trainers/base, ver, appo"),
    UpstreamName(PPO_TRAINER, "_get_resume_state_config_or_new_config", "hook", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_compute_actions_and_step_envs", "call", "trainers/ddppo"),
    UpstreamName(PPO_TRAINER, "_training_log", "call", "trainers/base, learning_curve"),
    UpstreamName(PPO_TRAINER, "_create_obs_transforms", "call", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_should_save_resume_state", "call", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_eval_checkpoint", "call", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_add_preemption_signal_handlers", "call", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_agent", "state", "trainers/*"),
    UpstreamName(PPO_TRAINER, "_ppo_cfg", "state", "trainers/base, ddppo, ver, appo"),
    UpstreamName(PPO_TRAINER, "_is_distributed", "state", "trainers/base, ver, appo"),
    UpstreamName(PPO_TRAINER, "_last_checkpoint_percent", "state", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_env_spec", "state", "compat/upstream_private, trainers/ver"),
    UpstreamName(PPO_TRAINER, "_rank0_keys", "state", "compat/upstream_private"),
    UpstreamName(
        PPO_TRAINER, "_single_proc_infos", "state", "compat/upstream_private, trainers/training_log"
    ),
    UpstreamName(AGENT_MANAGER, "_create_storage", "hook", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_create_updater", "hook", "trainers/appo_agent"),
    UpstreamName(AGENT_MANAGER, "_num_envs", "state", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_env_spec", "state", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_actor_critic", "state", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_config", "state", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_device", "state", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_rollouts", "state", "trainers/ver_agent"),
    UpstreamName(VECTOR_ENV, "_worker_env", "hook", "system/vector_env"),
    UpstreamName(VECTOR_ENV, "_spawn_workers", "hook", "system/vector_env"),
    UpstreamName(VECTOR_ENV, "_workers", "state", "system/vector_env"),
    UpstreamName(VECTOR_ENV, "_is_closed", "state", "system/vector_env"),
    UpstreamName(VECTOR_ENV, "_batch_renderer", "state", "system/vector_env"),
    UpstreamName(READ_WRAPPER, "read_fn", "state", "system/vector_env"),
    UpstreamName(READ_WRAPPER, "rank", "state", "system/vector_env"),
    UpstreamName(READ_WRAPPER, "is_waiting", "state", "system/vector_env"),
)


def adopt_env_pool(trainer: Any, pool: Any) -> None:
    """Makes ``pool`` (one of our env pools) ``trainer``'s envs, with the
    attributes upstream's ``PPOTrainer._init_envs`` sets for its vector env.

    Args:
        trainer: an upstream ``PPOTrainer``.
        pool: a :class:`~habitat_ver.system.env_pool.SharedBufferPool`.
    """
    trainer.envs = pool
    trainer._env_spec = EnvironmentSpec(
        observation_space=pool.observation_space,
        action_space=pool.action_space,
        orig_action_space=pool.action_space,
    )
    trainer._rank0_keys = set()
    trainer._single_proc_infos = {}
