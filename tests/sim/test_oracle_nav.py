"""Our oracle navigation's choice of where to stand (habitat_ver/sims/oracle_nav.py).

Needs habitat-lab's rearrange actions, which import the real habitat-sim.  The
scenario runs are in tests/hab/test_hab_real.py (the oracle solves an episode).
"""

import numpy as np
import pytest

pytestmark = pytest.mark.sim


class _Placer:
    """Stands in for habitat-lab's ``place_agent_at_dist_from_pos``: records
    each call, and fails for the distances in ``failing``."""

    def __init__(self, failing):
        self.failing = set(failing)
        self.calls = []

    def __call__(self, target, noise, distance, sim, attempts, filter_colliding, agent):
        self.calls.append((distance, attempts, filter_colliding))
        return np.array([distance, 0.0, 0.0]), 0.5, distance in self.failing


def test_a_free_sample_is_kept_as_habitat_lab_keeps_it():
    from habitat_ver.sims.oracle_nav import stand_near

    placer = _Placer(failing=())
    start, angle, failed = stand_near(np.zeros(3), 1.5, None, 200, None, place=placer)
    assert placer.calls == [(1.5, 200, True)]
    assert start[0] == 1.5 and angle == 0.5 and not failed


def test_no_free_sample_drives_to_the_closest_navmesh_point():
    # habitat-lab returns the robot's own pose then: the skill would end there.
    from habitat_ver.sims.oracle_nav import CLOSEST_POINT, stand_near

    placer = _Placer(failing=(1.5,))
    start, _, failed = stand_near(np.zeros(3), 1.5, None, 200, None, place=placer)
    assert placer.calls == [(1.5, 200, True), (CLOSEST_POINT, 200, True)]
    assert start[0] == CLOSEST_POINT and not failed


def test_asking_for_the_closest_point_is_one_call():
    from habitat_ver.sims.oracle_nav import CLOSEST_POINT, stand_near

    placer = _Placer(failing=(CLOSEST_POINT,))
    _, _, failed = stand_near(np.zeros(3), CLOSEST_POINT, None, 200, None, place=placer)
    assert placer.calls == [(CLOSEST_POINT, 200, True)] and failed


def test_a_config_naming_the_action_registers_it_in_the_env_worker():
    from habitat.core.registry import registry
    from omegaconf import OmegaConf

    from habitat_ver.envs.builder import register_our_habitat_classes

    config = OmegaConf.create(
        {
            "habitat": {
                "simulator": {"type": "Sim-v0"},
                "task": {"actions": {"oracle_nav_action": {"type": "HabVerOracleNavAction"}}},
            }
        }
    )
    register_our_habitat_classes(config)
    action = registry.get_task_action("HabVerOracleNavAction")
    from habitat.tasks.rearrange.actions.oracle_nav_action import OracleNavAction

    assert action is not None and issubclass(action, OracleNavAction)
