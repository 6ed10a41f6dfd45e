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

In kinematic mode (``habitat.simulator.kinematic_mode``, the oracle configs)
habitat-lab makes every articulated object KINEMATIC when a scene is loaded,
but the ``reset`` that follows (habitat-sim's ``Simulator.reset``) gives the
furniture back the DYNAMIC motion of its scene instance.  Its drawers and
doors then move under physics while the objects in them are kinematic and
carried along by habitat-lab's kinematic relationships: a drawer that an
``open_cab`` effect opened with a cup inside was pushed shut by the cup
within three steps (HAB Set Table, ``v3_sc3_staging_03``).  This simulator
makes the furniture kinematic again after every reset, as habitat-lab meant.

Registered as ``HabVerRearrangeSim-v0``; ``hab_data=generated`` selects it.
"""

from typing import Dict, List, Set

import habitat_sim
from habitat.core.registry import registry
from habitat.tasks.rearrange.rearrange_sim import RearrangeSim

SIM_NAME = "HabVerRearrangeSim-v0"


@registry.register_simulator(name=SIM_NAME)
class FurnitureNavmeshRearrangeSim(RearrangeSim):
    """``RearrangeSim`` whose navmesh excludes fixed-base articulated furniture,
    and whose furniture stays kinematic in kinematic mode."""

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

    # RearrangeSim.reset returns no observation (habitat-lab's own override).
    def reset(self) -> None:  # type: ignore[override]
        super().reset()
        if self.habitat_config.kinematic_mode:
            self.make_furniture_kinematic()

    def make_furniture_kinematic(self) -> None:
        """What habitat-lab does to articulated objects in kinematic mode (on
        a new scene only): KINEMATIC, without joint motors."""
        for ao in self.fixed_furniture():
            if ao.motion_type == habitat_sim.physics.MotionType.DYNAMIC:
                ao.motion_type = habitat_sim.physics.MotionType.KINEMATIC
            for motor_id in ao.existing_joint_motor_ids:
                ao.remove_joint_motor(motor_id)

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
