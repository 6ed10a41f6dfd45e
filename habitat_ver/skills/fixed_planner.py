"""TP-SRL's fixed task plan, with the VER paper's two changes as config keys.

Upstream's ``FixedHighLevelPolicy`` runs the PDDL problem's ``solution``,
with ``reset_arm(0)`` between actions when ``add_arm_rest`` is set and
``wait(30)`` at the end.  :class:`VERFixedHighLevelPolicy` builds that list
with :func:`plan_steps`, which also reads, from the same
``high_level_policy`` section:

* ``renavigate_after``: PDDL actions after which the agent navigates again to
  the action's object (VER paper, appendix B: on Set Table, navigation runs
  again after ``open_cab``, because the open-cabinet skill with base movement
  tends to move away from the cabinet);
* ``skip_actions``: PDDL actions dropped from the plan.  TP-SRL(NoNav) drops
  ``nav`` and ``nav_to_receptacle``: pick and place must navigate themselves.
"""

from typing import Iterable, List, Sequence, Tuple

from habitat_baselines.rl.hrl.hl.fixed_policy import FixedHighLevelPolicy

PlanStep = Tuple[str, List[str]]

# Skill steps upstream adds around the plan.
RESET_ARM_STEP: PlanStep = ("reset_arm", ["0"])
FINAL_WAIT_STEP: PlanStep = ("wait", ["30"])
# The PDDL navigation action inserted by `renavigate_after`.
NAV_ACTION = "nav"


def _renavigation(step: PlanStep) -> PlanStep:
    """``nav(obj, robot)`` for an action whose last two arguments are (obj, robot)."""
    name, args = step
    if len(args) < 2:
        raise ValueError(
            f"renavigate_after names {name!r}, whose plan step {name}({', '.join(args)}) "
            "has no (object, robot) arguments to navigate to"
        )
    return (NAV_ACTION, [args[-2], args[-1]])


def plan_steps(
    solution: Sequence[PlanStep],
    add_arm_rest: bool,
    renavigate_after: Iterable[str] = (),
    skip_actions: Iterable[str] = (),
) -> List[PlanStep]:
    """The skill sequence the fixed high-level policy runs.

    Args:
        solution: the PDDL problem's solution as ``(action, args)`` steps.
        add_arm_rest: put ``reset_arm(0)`` between consecutive steps.
        renavigate_after: actions followed by a ``nav`` to their object.
        skip_actions: actions left out (applied after ``renavigate_after``).

    Returns:
        The steps, ending with ``wait(30)``.
    """
    renavigate_after, skip_actions = set(renavigate_after), set(skip_actions)
    steps: List[PlanStep] = []
    for step in solution:
        steps.append((step[0], list(step[1])))
        if step[0] in renavigate_after:
            steps.append(_renavigation(step))
    steps = [s for s in steps if s[0] not in skip_actions]
    planned: List[PlanStep] = []
    for i, step in enumerate(steps):
        planned.append(step)
        if add_arm_rest and i < len(steps) - 1:
            planned.append((RESET_ARM_STEP[0], list(RESET_ARM_STEP[1])))
    planned.append((FINAL_WAIT_STEP[0], list(FINAL_WAIT_STEP[1])))
    return planned


class VERFixedHighLevelPolicy(FixedHighLevelPolicy):
    """Upstream's fixed planner with ``renavigate_after`` and ``skip_actions``."""

    def _parse_solution_actions(self) -> List[PlanStep]:
        solution = [
            (action.name, [x.name for x in action.param_values])
            for action in self._pddl_prob.solution
        ]
        return plan_steps(
            solution,
            add_arm_rest=bool(self._config.get("add_arm_rest", False)),
            renavigate_after=self._config.get("renavigate_after", []) or [],
            skip_actions=self._config.get("skip_actions", []) or [],
        )
