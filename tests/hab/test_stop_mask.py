"""The navigation skill's stop is masked beyond max_stop_distance (paper: 2 m)."""

import pytest
import torch
from habitat_baselines.common.tensor_dict import TensorDict

from habitat_ver.skills.stop_mask import NO_STOP, mask_stop

from .conftest import make_nav_skill


def test_mask_stop_by_distance():
    stop = torch.tensor([1.0, 1.0, 1.0, -0.5])
    distance = torch.tensor([1.9, 2.0, 2.1, 3.0])
    masked, was_masked = mask_stop(stop, distance, 2.0)
    # 1.9 and exactly 2.0 may stop; 2.1 is masked; a non-stop stays a non-stop.
    assert masked.tolist() == [1.0, 1.0, NO_STOP, NO_STOP]
    assert was_masked.tolist() == [False, False, True, False]
    assert stop.tolist() == [1.0, 1.0, 1.0, -0.5]  # input untouched


def test_mask_stop_refuses_a_non_positive_distance():
    with pytest.raises(ValueError, match="max_stop_distance=0.0 must be > 0"):
        mask_stop(torch.ones(1), torch.ones(1), 0.0)


def polar_observations(distances_by_env, target):
    """Two targets per env in obj_start_gps_compass: [rho, -phi] each."""
    n = len(distances_by_env)
    start = torch.full((n, 4), 9.0)
    start[:, 2 * target] = torch.tensor(distances_by_env)
    start[:, 2 * target + 1] = 0.25
    return TensorDict(
        {
            "obj_start_gps_compass": start,
            "obj_goal_gps_compass": torch.full((n, 4), 7.0),
            "is_holding": torch.zeros(n, 1),
        }
    )


@pytest.mark.parametrize("distance, stops", [(1.9, True), (2.1, False)])
def test_nav_skill_stops_near_and_is_masked_far(distance, stops):
    skill = make_nav_skill(batch_size=1)
    skill.on_enter(
        [["any_targets|1", "robot_0"]], [0], None, torch.zeros(1, 1, 4), torch.zeros(1, 11), ["nav"]
    )
    obs = polar_observations([distance], target=1)
    out = skill.act(
        obs,
        torch.zeros(1, 1, 4),
        torch.zeros(1, 11),
        torch.ones(1, 1, dtype=torch.bool),
        cur_batch_idx=[0],
    )
    # The network saw target 1's polar coordinates as its goal input.
    assert skill._wrap_policy.seen_goal.tolist() == [[pytest.approx(distance), 0.25]]
    # Stop column of the full action: 11 = 8 (arm, grip) + 2 (base) + stop.
    assert out.actions[0, 10].item() == (1.0 if stops else NO_STOP)
    done = skill._is_skill_done(obs, None, None, torch.ones(1, 1), [0])
    assert done.tolist() == [stops]
    assert skill.num_masked_stops == (0 if stops else 1)


def test_goal_targets_use_the_goal_sensor_and_the_configured_distance():
    skill = make_nav_skill(batch_size=2, max_stop_distance=8.0)
    args = [["TARGET_any_targets|0", "robot_0"], ["any_targets|1", "robot_0"]]
    skill.on_enter(args, [0, 1], None, torch.zeros(2, 1, 4), torch.zeros(2, 11), ["nav", "nav"])
    obs = polar_observations([3.0, 3.0], target=1)
    out = skill.act(
        obs,
        torch.zeros(2, 1, 4),
        torch.zeros(2, 11),
        torch.ones(2, 1, dtype=torch.bool),
        cur_batch_idx=[0, 1],
    )
    # env 0 goes to a goal (obj_goal_gps_compass, rho 7 <= 8: may stop);
    # env 1 to object 1 at 3 m (<= 8: may stop); at the default 2 m both
    # would have been masked.
    assert skill._wrap_policy.seen_goal[:, 0].tolist() == [7.0, 3.0]
    assert out.actions[:, 10].tolist() == [1.0, 1.0]
