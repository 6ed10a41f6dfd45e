"""Simulators and task actions of ours for habitat-lab's registry, by the name configs give.

Their modules import habitat-lab's simulators, which need the real
habitat-sim, so they are imported where envs are built
(:func:`habitat_ver.envs.builder.register_our_habitat_classes`), not by
``import habitat_ver``.
"""

# habitat.simulator.type -> the module that registers it.
SIM_MODULES = {"HabVerRearrangeSim-v0": "habitat_ver.sims.rearrange_sim"}
# habitat.task.actions.<name>.type -> the module that registers it.
ACTION_MODULES = {"HabVerOracleNavAction": "habitat_ver.sims.oracle_nav"}
