"""The fixed plan: Set Table navigates again after open_cab; NoNav drops nav."""

import os.path as osp

from habitat.tasks.rearrange.multi_task.pddl_domain import PddlProblem

from habitat_ver.config.compose import get_config
from habitat_ver.skills.fixed_planner import plan_steps


def solution_of(name):
    task = get_config(name).habitat.task
    problem = PddlProblem(
        task.pddl_domain_def,
        osp.join(task.task_spec_base_path, task.task_spec + ".yaml"),
        None,
        read_config=False,
    )
    return [(a.name, [x.name for x in a.param_values]) for a in problem.solution]


def names(steps):
    return [s[0] for s in steps]


def test_set_table_navigates_to_the_object_after_opening_the_cabinet():
    hl = get_config(
        "hab/set_table"
    ).habitat_baselines.rl.policy.main_agent.hierarchical_policy.high_level_policy
    steps = plan_steps(
        solution_of("hab/set_table"), hl.add_arm_rest, hl.renavigate_after, hl.skip_actions
    )
    i = names(steps).index("open_cab")
    assert steps[i] == ("open_cab", ["cab_push_point_5", "bowl_target|0", "robot_0"])
    assert steps[i + 1] == ("reset_arm", ["0"])
    assert steps[i + 2] == ("nav", ["bowl_target|0", "robot_0"])
    assert steps[i + 4] == ("pick", ["bowl_target|0", "robot_0"])
    # 11 solution steps + 1 inserted nav, 11 arm rests between them, final wait.
    assert len(steps) == 12 + 11 + 1 and steps[-1] == ("wait", ["30"])


def test_nonav_drops_every_navigation_step():
    hl = get_config(
        "hab/set_table_nonav"
    ).habitat_baselines.rl.policy.main_agent.hierarchical_policy.high_level_policy
    steps = plan_steps(
        solution_of("hab/set_table_nonav"), hl.add_arm_rest, hl.renavigate_after, hl.skip_actions
    )
    # Actions at even positions, arm rests between them, then the final wait.
    assert names(steps)[::2] == ["open_cab", "pick", "place", "open_fridge", "pick", "place"]
    assert names(steps)[1::2] == ["reset_arm"] * 5 + ["wait"]


def test_tidy_house_plan_is_upstreams():
    solution = solution_of("hab/tidy_house")
    steps = plan_steps(solution, add_arm_rest=False)
    assert steps[:-1] == [(n, list(a)) for n, a in solution]
    assert names(steps)[:4] == ["nav", "pick", "nav", "place"] and len(steps) == 21
