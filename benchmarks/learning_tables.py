"""Markdown tables of the learning workloads, rendered from records: sample
efficiency, blind PointNav, the HAB skills, the TP-SRL stages and the demo."""

from typing import Any, Callable, Dict, List, Optional

import convert
import records
from tables import SYSTEM_NAMES, num, run_label, table

Record = Dict[str, Any]


def _newest(all_records: List[Record], workload: str, **settings: Any) -> Optional[Record]:
    found = records.of_workload(all_records, workload, **settings)
    return found[-1] if found else None


def _kilo(steps: Optional[float]) -> str:
    return "" if steps is None else f"{steps / 1000:.1f}k"


def _per_seed(record: Record, cell: Callable[[Dict[str, Any]], str]) -> str:
    """A table of one row per system and one column per seed, each cell
    ``cell`` of that seed's run."""
    seeds = sorted({s for v in record["systems"].values() for s in v["seeds"]})
    rows = [
        [SYSTEM_NAMES.get(name, name)] + [cell(system["seeds"].get(seed, {})) for seed in seeds]
        for name, system in record["systems"].items()
    ]
    return table(["system"] + [f"seed {s}" for s in seeds], rows)


def _efficiency_cell(run: Dict[str, Any]) -> str:
    idle = run.get("idle_share")
    return (
        f"{_kilo(run.get('steps_to_threshold'))} / {num(run.get('final_return'), '.0f')}"
        f" / {num(run.get('steps_per_s'), '.0f')} ({num(idle and 100 * idle, '.0f')}%)"
    )


def _blind_cell(run: Dict[str, Any]) -> str:
    final = f"{num(run.get('final_success'), '.2f')}, {num(run.get('final_spl'), '.2f')}"
    val = f"{num(run.get('val_success'), '.2f')}, {num(run.get('val_spl'), '.2f')}"
    return (
        f"{_kilo(run.get('steps_to_threshold'))} / {final} / {val} / "
        f"{num(run.get('steps_per_s'), '.0f')}"
    )


def sample_efficiency_table(all_records: List[Record]) -> str:
    """Per system and seed: steps to the threshold / final return / steady
    steps/s (machine idle %)."""
    record = _newest(all_records, "sample_efficiency")
    if record is None:
        return "No record of this workload yet.\n"
    note = f"\nRun: {run_label(record)}; threshold {num(record['settings']['threshold'], '.0f')}.\n"
    return _per_seed(record, _efficiency_cell) + note


def pointnav_blind_table(all_records: List[Record]) -> str:
    """Per system and seed: steps to window success 0.8 / final window success,
    SPL / val success, SPL / steady steps/s."""
    record = _newest(all_records, "pointnav_blind")
    if record is None:
        return "No record of this workload yet.\n"
    return _per_seed(record, _blind_cell) + f"\nRun: {run_label(record)}.\n"


def _skill_runs(all_records: List[Record]) -> List[Record]:
    """Every skill-learning record, by config, then by steps trained (then
    oldest first): a run trained further (``--resume``), or one of its
    checkpoints evaluated, is a row of its own, so the table shows how
    success moved with the steps."""
    runs = records.of_workload(all_records, "skill_learning")
    return sorted(
        runs,
        key=lambda r: (
            r["settings"]["config"],
            (r["systems"]["ver"].get("started_from_steps") or 0)
            + (r["systems"]["ver"].get("steps") or 0),
            r["start"] or "",
        ),
    )


def _val_episodes(settings: Dict[str, Any]) -> str:
    """``10``, or ``10 x 5`` for 10 episodes evaluated 5 times each."""
    episodes = num(settings.get("episodes"), "d")
    repeats = settings.get("evals_per_episode") or 1
    return episodes if repeats == 1 else f"{episodes} x {repeats}"


def _steps(ver: Dict[str, Any]) -> str:
    """The steps trained: ``N``, or ``M + N`` for a run that started from
    another run's weights at its step M (its wall time is its own)."""
    steps = num(ver.get("steps"), ",.0f")
    before = ver.get("started_from_steps")
    return steps if not before else f"{before:,} + {steps}"


def skills_table(all_records: List[Record]) -> str:
    """HAB skills: success on val arrangements, untrained vs trained; one row
    per run (:func:`_skill_runs`)."""
    rows = []
    for record in _skill_runs(all_records):
        ver = record["systems"]["ver"]
        metric = convert.success_metric(ver["trained"]) or convert.success_metric(ver["untrained"])
        wall = ver.get("wall_s")
        rows.append(
            [
                f"`{record['settings']['config']}`",
                _steps(ver),
                num(wall and wall / 60, ".0f"),
                metric or "",
                num(ver["untrained"].get(metric) if metric else None, ".2f"),
                num(ver["trained"].get(metric) if metric else None, ".2f"),
                _val_episodes(record["settings"]),
                run_label(record),
            ]
        )
    if not rows:
        return "No skill-learning record yet.\n"
    header = ["config", "steps", "wall min", "success metric", "untrained", "trained"]
    return table(header + ["val episodes", "run"], rows)


# The figures of a skill run beside its success, untrained -> trained: the
# stages before success (grasped, at the target state, object at the goal,
# then the arm back at rest) and what ends episodes early.
SKILL_DETAIL = {
    "reward": "episode return",
    "did_pick_object": "grasped",
    "ee_to_object_distance.0": "end effector to object (m)",
    "art_obj_at_desired_state": "at the target state",
    "obj_at_goal.0": "object at the goal",
    "ee_to_rest_distance": "end effector to rest (m)",
    "force_terminate": "ended on the force limit",
    "robot_collisions.robot_scene_colls": "robot-scene collisions",
}


def skill_detail_table(all_records: List[Record]) -> str:
    """Per run (:func:`_skill_runs`): each of :data:`SKILL_DETAIL`,
    untrained -> trained."""
    rows = []
    for record in _skill_runs(all_records):
        ver = record["systems"]["ver"]
        cells = [f"`{record['settings']['config']}`"]
        for key in SKILL_DETAIL:
            before, after = ver["untrained"].get(key), ver["trained"].get(key)
            cells.append("" if before is None else f"{before:.2f} -> {after:.2f}")
        rows.append(cells)
    if not rows:
        return "No skill-learning record yet.\n"
    return table(["config", *SKILL_DETAIL.values()], rows)


def stages_table(all_records: List[Record], kind: str) -> str:
    """Success (%) after each stage of the newest ``hab_stages`` record of
    ``kind`` ("oracle", "learned"), as ``hab_stage_report`` writes it."""
    from habitat_ver.tools.hab_stage_report import Evaluation, markdown_table

    record = _newest(all_records, "hab_stages", kind=kind)
    if record is None:
        return "No record of these evaluations yet.\n"
    runs = {
        name: Evaluation(metrics=run["metrics"], episodes=run["episodes"])
        for name, run in record["systems"].items()
    }
    return markdown_table(runs) + f"\nRun: {run_label(record)}.\n"


def demo_table(all_records: List[Record]) -> str:
    """``make demo``'s run: steps, wall time, steps/s, return, load."""
    record = _newest(all_records, "demo")
    if record is None:
        return "No record of the demo yet.\n"
    m = record["metrics"]
    load = record["load"]
    rows = [
        [
            f"{m['steps']:,}",
            f"{m['wall_s']:.0f}",
            f"{m['steps'] / m['wall_s']:.1f}",
            f"{m['return_first']:.2f} -> {m['return_last']:.2f}",
            f"{load['before'][0]:.1f} -> {load['after'][0]:.1f}",
            run_label(record),
        ]
    ]
    header = ["steps", "wall s", "steps/s", "mean return, first -> last", "load", "run"]
    return table(header, rows)
