"""The private names of habitat-baselines and habitat-lab that habitat-ver uses.

Our trainers reuse upstream's ``PPOTrainer`` loop, its agent manager, its
``PPO`` updater and its ``VectorEnv``; our skills and planner reuse its
hierarchical policy; our simulator, sensors and episode generator extend
habitat-lab's.  So we depend on names upstream may rename in any release.
Every one is listed in :data:`UPSTREAM_PRIVATE`, with the releases it was
checked against (:data:`CHECKED_VERSIONS`); ``tests/compat/test_upstream_private.py``
reads the whole package and fails on an installed release that lacks a listed
name, when our code uses an upstream private name this list lacks, and when a
listed name is no longer used.

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
PPO = "habitat_baselines.rl.ppo.ppo.PPO"
SKILL = "habitat_baselines.rl.hrl.skills.skill.SkillPolicy"
NN_SKILL = "habitat_baselines.rl.hrl.skills.nn_skill.NnSkillPolicy"
HIERARCHICAL_POLICY = "habitat_baselines.rl.hrl.hierarchical_policy.HierarchicalPolicy"
HIGH_LEVEL_POLICY = "habitat_baselines.rl.hrl.hl.high_level_policy.HighLevelPolicy"
FIXED_POLICY = "habitat_baselines.rl.hrl.hl.fixed_policy.FixedHighLevelPolicy"
SENSOR = "habitat.core.simulator.Sensor"
REARRANGE_SIM = "habitat.tasks.rearrange.rearrange_sim.RearrangeSim"
EPISODE_GENERATOR = "habitat.datasets.rearrange.rearrange_generator.RearrangeEpisodeGenerator"
ORACLE_NAV = "habitat.tasks.rearrange.actions.oracle_nav_action.OracleNavAction"


class UpstreamName(NamedTuple):
    """One upstream name we depend on."""

    owner: str  # dotted path of the class that defines it (or a base of it), or module
    name: str
    kind: str  # "hook", "call" or "state"
    used_in: str  # our modules, under habitat_ver/


UPSTREAM_PRIVATE: Tuple[UpstreamName, ...] = (
    UpstreamName(PPO_TRAINER, "_init_envs", "hook", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_init_train", "hook", "trainers/appo, base, ver"),
    UpstreamName(PPO_TRAINER, "_create_agent", "hook", "trainers/appo, base, ver"),
    UpstreamName(PPO_TRAINER, "_collect_environment_result", "hook", "trainers/ddppo"),
    UpstreamName(PPO_TRAINER, "_coalesce_post_step", "hook", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_update_agent", "hook", "trainers/appo, base, ver"),
    UpstreamName(
        PPO_TRAINER, "_get_resume_state_config_or_new_config", "hook", "trainers/checkpointing"
    ),
    UpstreamName(PPO_TRAINER, "_compute_actions_and_step_envs", "call", "trainers/ddppo"),
    UpstreamName(PPO_TRAINER, "_training_log", "call", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_create_obs_transforms", "call", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_should_save_resume_state", "call", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_eval_checkpoint", "call", "trainers/base, checkpointing"),
    UpstreamName(PPO_TRAINER, "_add_preemption_signal_handlers", "call", "trainers/base"),
    UpstreamName(PPO_TRAINER, "_agent", "state", "trainers/appo, base, checkpointing, ddppo, ver"),
    UpstreamName(PPO_TRAINER, "_ppo_cfg", "state", "trainers/checkpointing, ddppo, ver"),
    UpstreamName(PPO_TRAINER, "_is_distributed", "state", "trainers/appo, base, checkpointing"),
    UpstreamName(PPO_TRAINER, "_last_checkpoint_percent", "state", "trainers/checkpointing"),
    UpstreamName(PPO_TRAINER, "_env_spec", "state", "compat/upstream_private, trainers/base"),
    UpstreamName(PPO_TRAINER, "_rank0_keys", "state", "compat/upstream_private"),
    UpstreamName(
        PPO_TRAINER, "_single_proc_infos", "state", "compat/upstream_private, trainers/training_log"
    ),
    UpstreamName(AGENT_MANAGER, "_create_storage", "hook", "trainers/appo_agent, ver_agent"),
    UpstreamName(AGENT_MANAGER, "_num_envs", "state", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_env_spec", "state", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_actor_critic", "state", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_config", "state", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_device", "state", "trainers/ver_agent"),
    UpstreamName(AGENT_MANAGER, "_rollouts", "state", "trainers/ver_agent"),
    UpstreamName(VECTOR_ENV, "_worker_env", "hook", "system/lockstep_pool"),
    UpstreamName(VECTOR_ENV, "_spawn_workers", "hook", "system/lockstep_pool"),
    UpstreamName(VECTOR_ENV, "_workers", "state", "system/lockstep_pool"),
    UpstreamName(VECTOR_ENV, "_is_closed", "state", "system/lockstep_pool"),
    UpstreamName(VECTOR_ENV, "_batch_renderer", "state", "system/lockstep_pool"),
    UpstreamName(READ_WRAPPER, "read_fn", "state", "system/lockstep_pool"),
    UpstreamName(READ_WRAPPER, "rank", "state", "system/lockstep_pool"),
    UpstreamName(READ_WRAPPER, "is_waiting", "state", "system/lockstep_pool"),
    # PPO.update's per-minibatch step, split into named hooks by our updater.
    UpstreamName(PPO, "_update_from_batch", "hook", "updaters/ppo"),
    UpstreamName(PPO, "_set_grads_to_none", "call", "updaters/ppo"),
    UpstreamName(PPO, "_evaluate_actions", "call", "updaters/ppo"),
    # TP-SRL: our skills, hierarchical policy and fixed planner extend upstream's.
    UpstreamName(SKILL, "_config", "state", "skills/nav"),
    UpstreamName(SKILL, "_cur_skill_args", "state", "skills/nav"),
    UpstreamName(SKILL, "_stop_action_idx", "state", "skills/nav"),
    UpstreamName(NN_SKILL, "_internal_act", "hook", "skills/nav"),
    UpstreamName(NN_SKILL, "_get_filtered_obs", "hook", "skills/nav"),
    UpstreamName(NN_SKILL, "_filtered_obs_space", "state", "skills/nav"),
    UpstreamName(NN_SKILL, "_did_want_done", "state", "skills/nav"),
    UpstreamName(SKILL, "_batch_size", "state", "skills/art_obj"),
    UpstreamName(SKILL, "_is_skill_done", "hook", "skills/art_obj"),
    UpstreamName(SKILL, "_parse_skill_arg", "hook", "skills/art_obj"),
    UpstreamName(SKILL, "_get_multi_sensor_index", "hook", "skills/art_obj"),
    UpstreamName(HIERARCHICAL_POLICY, "_create_skills", "hook", "skills/hierarchical_policy"),
    UpstreamName(HIERARCHICAL_POLICY, "_get_hl_policy_cls", "hook", "skills/hierarchical_policy"),
    UpstreamName(HIERARCHICAL_POLICY, "_num_envs", "state", "skills/hierarchical_policy"),
    UpstreamName(HIERARCHICAL_POLICY, "_pddl", "state", "skills/hierarchical_policy"),
    UpstreamName(HIERARCHICAL_POLICY, "_skills", "state", "skills/hierarchical_policy"),
    UpstreamName(HIERARCHICAL_POLICY, "_name_to_idx", "state", "skills/hierarchical_policy"),
    UpstreamName(HIERARCHICAL_POLICY, "_idx_to_name", "state", "skills/hierarchical_policy"),
    UpstreamName(HIERARCHICAL_POLICY, "_active_envs", "state", "skills/hierarchical_policy"),
    UpstreamName(
        HIERARCHICAL_POLICY, "_cur_call_high_level", "state", "skills/hierarchical_policy"
    ),
    UpstreamName(HIERARCHICAL_POLICY, "_cur_skills", "state", "skills/hierarchical_policy"),
    UpstreamName(HIERARCHICAL_POLICY, "_high_level_policy", "state", "skills/hierarchical_policy"),
    UpstreamName(FIXED_POLICY, "_parse_solution_actions", "hook", "skills/fixed_planner"),
    UpstreamName(HIGH_LEVEL_POLICY, "_config", "state", "skills/fixed_planner"),
    UpstreamName(HIGH_LEVEL_POLICY, "_pddl_prob", "state", "skills/fixed_planner"),
    # habitat-lab's sensor interface (a sensor implements these), its
    # simulator's navmesh step and its episode generator's debug switch.
    UpstreamName(SENSOR, "_get_uuid", "hook", "skills/geodesic"),
    UpstreamName(SENSOR, "_get_sensor_type", "hook", "skills/geodesic"),
    UpstreamName(SENSOR, "_get_observation_space", "hook", "skills/geodesic"),
    UpstreamName(REARRANGE_SIM, "_recompute_navmesh", "hook", "sims/rearrange_sim"),
    # habitat-lab's oracle navigation: where it drives for a target.
    UpstreamName(ORACLE_NAV, "_get_target_for_idx", "hook", "sims/oracle_nav"),
    UpstreamName(ORACLE_NAV, "_targets", "state", "sims/oracle_nav"),
    UpstreamName(ORACLE_NAV, "_poss_entities", "state", "sims/oracle_nav"),
    UpstreamName(ORACLE_NAV, "_task", "state", "sims/oracle_nav"),
    UpstreamName(ORACLE_NAV, "_config", "state", "sims/oracle_nav"),
    UpstreamName(ORACLE_NAV, "_sim", "state", "sims/oracle_nav"),
    UpstreamName(EPISODE_GENERATOR, "_render_debug_obs", "state", "tools/make_hab_dataset"),
    UpstreamName(EPISODE_GENERATOR, "_scene_sampler", "state", "tools/make_hab_dataset"),
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
