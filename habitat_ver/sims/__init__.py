"""Simulators of ours for habitat-lab's registry, by the name configs give.

Their modules import habitat-lab's simulators, which need the real
habitat-sim, so they are imported where envs are built
(:func:`habitat_ver.envs.builder.register_our_simulator`), not by
``import habitat_ver``.
"""

# habitat.simulator.type -> the module that registers it.
SIM_MODULES = {"HabVerRearrangeSim-v0": "habitat_ver.sims.rearrange_sim"}
