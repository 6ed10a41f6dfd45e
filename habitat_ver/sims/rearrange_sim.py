"""habitat-lab's ``RearrangeSim`` with fixed furniture in its navmesh.

``RearrangeSim`` recomputes the navmesh of every new scene with
``include_static_objects``, which counts STATIC objects only.  ReplicaCAD's
fridge, kitchen counter and cabinet are articulated objects with a fixed base
but DYNAMIC motion (their doors and drawers move), so the navmesh runs through
them: on our generated apartment half the fridge's and two thirds of the
counter's footprint were navigable, and habitat-lab's oracle navigation drove
the robot into them.  :class:`FurnitureNavmeshRearrangeSim` makes the scene's
articulated objects (not the robots) STATIC for the recomputation
only, then gives them back their motion type.  (Articulated objects a task
adds later, after the navmesh is built, are not affected.)

Registered as ``HabVerRearrangeSim-v0``; ``hab_data=generated`` selects it.
"""

from typing import Dict, List, Set

import habitat_sim
from habitat.core.registry import registry
from habitat.tasks.rearrange.rearrange_sim import RearrangeSim

SIM_NAME = "HabVerRearrangeSim-v0"


@registry.register_simulator(name=SIM_NAME)
class FurnitureNavmeshRearrangeSim(RearrangeSim):
    """``RearrangeSim`` whose navmesh excludes fixed-base articulated furniture."""

    def _recompute_navmesh(self) -> None:
        furniture = self.fixed_furniture()
        before: Dict[int, habitat_sim.physics.MotionType] = {}
        for ao in furniture:
            before[ao.object_id] = ao.motion_type
            ao.motion_type = habitat_sim.physics.MotionType.STATIC
        try:
            super()._recompute_navmesh()
        finally:
            for ao in furniture:
                ao.motion_type = before[ao.object_id]

    def fixed_furniture(self) -> List[habitat_sim.physics.ManagedArticulatedObject]:
        """The scene's articulated objects, robots excluded: the furniture a
        scene instance places (with ``fixed_base``, which habitat-sim 0.3.3
        does not expose on the object)."""
        robots: Set[int] = {
            agent.sim_obj.object_id for agent in self.agents_mgr.articulated_agents_iter
        }
        manager = self.get_articulated_object_manager()
        return [
            ao
            for ao in manager.get_objects_by_handle_substring().values()
            if ao.object_id not in robots
        ]
