"""Per-stage success of HAB evaluations, as in the VER paper's Figure 6.

Reads the evaluation logs of ``hab/*`` runs (habitat-baselines writes
``Average episode pddl_stage_goals.stage_<s>_success: <v>`` and
``Average episode pddl_success: <v>`` to ``habitat_baselines.log_file``; our
trainers open each evaluation with a line naming the checkpoint and the number
of episodes, :mod:`habitat_ver.trainers.eval_header`) and writes a Markdown
table and a plot of success after each stage, one panel per scenario, with the
paper's numbers drawn as reference marks, then prints the table and the paths
of both files.

Stages are numbered as in habitat-lab's PDDL problems and docs/HAB.md:
``stage_0_5`` (0.5) is holding the first object, ``stage_1`` (1) the first
object placed, and so on; the last column is the full task (``pddl_success``).
A log holding several evaluations (a second one appended to the same file) is
refused in one line: the report would not know which to show.

    python -m habitat_ver.tools.hab_stage_report \\
        --run hab/tidy_house=outputs/hab/tidy_house/eval.log \\
        --run hab/tidy_house_nonav=outputs/hab/tidy_house_nonav/eval.log \\
        --out outputs/hab/report
"""

import argparse
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

from habitat_ver.common.atomic import write_atomically
from habitat_ver.trainers.eval_header import COUNTED, HEADER

SCENARIOS = ("tidy_house", "prepare_groceries", "set_table")
METHODS = {
    "": "TP-SRL",
    "_nonav": "TP-SRL(NoNav)",
    "_oracle": "oracle skills",
    "_learned_pick": "oracle, learned pick",
    "_learned_open": "oracle, learned open",
}
# Every scenario's TP-SRL, TP-SRL(NoNav) and oracle configs, and the ones that
# swap learned skills in among oracle skills.
RUN_NAMES = tuple(f"hab/{s}{m}" for s in SCENARIOS for m in ("", "_nonav", "_oracle")) + (
    "hab/tidy_house_learned_pick",
    "hab/set_table_learned_open",
)
FULL = "full"
# Success per stage: a stage number (0.5, 1.0, 1.5, ...) or FULL, the whole task.
Stages = Dict[Union[float, str], float]

# VER paper section 6 (Figure 6 and text): success after a stage or of the
# full task, per (scenario, method): Tidy House 32% full task (TP-SRL); 50%
# NavPick (0.5) and 20% NavPickNavPlace (1) for TP-SRL(NoNav); Prepare
# Groceries 5% full task, 15% first interaction (NoNav); Set Table 7.5% first
# pick and place, 4% first interaction (NoNav).
PAPER_REFERENCE: Dict[Tuple[str, str], Stages] = {
    ("tidy_house", "TP-SRL"): {FULL: 0.32},
    ("tidy_house", "TP-SRL(NoNav)"): {0.5: 0.50, 1.0: 0.20},
    ("prepare_groceries", "TP-SRL"): {FULL: 0.05},
    ("prepare_groceries", "TP-SRL(NoNav)"): {0.5: 0.15},
    ("set_table", "TP-SRL"): {1.0: 0.075},
    ("set_table", "TP-SRL(NoNav)"): {0.5: 0.04},
}
# One colour per method in every panel; the paper's marks take their method's.
COLOURS = {
    "TP-SRL": "tab:blue",
    "TP-SRL(NoNav)": "tab:orange",
    "oracle skills": "tab:green",
    "oracle, learned pick": "tab:purple",
}

_LINE = re.compile(r"Average episode (\S+): ([-+0-9.eE]+|nan)\s*$")
_STAGE = re.compile(r"^pddl_stage_goals\.stage_(\d+)(?:_(5))?_success$")
_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


@dataclass
class Evaluation:
    """One evaluation's results in a log.

    Attributes:
        metrics: ``Average episode <key>`` values.
        episodes: episodes the averages are over (None: the log does not say).
        line: the log line it starts at (1-based).
        started: the timestamp of that line, if any.
    """

    metrics: Dict[str, float] = field(default_factory=dict)
    episodes: Optional[int] = None
    line: int = 1
    started: str = ""


def read_evaluations(path: str) -> List[Evaluation]:
    """Every evaluation with results in a log, in order.

    An evaluation starts at our header line (:data:`HEADER`) or, in logs
    without one, where an ``Average episode`` key comes a second time.
    """
    if not os.path.isfile(path):
        raise ValueError(
            f"no evaluation log at {path!r}; run the evaluation first (python -m "
            "habitat_baselines.run --config-name=hab/<scenario>), which writes its "
            "habitat_baselines.log_file there"
        )
    found = [Evaluation()]
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            header = HEADER.search(line.rstrip("\n"))
            counted = COUNTED.search(line.rstrip("\n"))
            if counted is not None:  # what the averages were over, after them
                found[-1].episodes = int(counted.group("episodes"))
            result = _LINE.search(line)
            if header is not None or (result and result.group(1) in found[-1].metrics):
                found.append(Evaluation(line=number, started=_started(line)))
                if header is not None:
                    found[-1].episodes = int(header.group("episodes"))
            if result:
                if not found[-1].metrics and not found[-1].started:
                    found[-1].started = _started(line)
                found[-1].metrics[result.group(1)] = float(result.group(2))
    return [e for e in found if e.metrics]


def _started(line: str) -> str:
    match = _TIME.search(line)
    return match.group(1) if match else ""


def parse_eval_log(path: str) -> Evaluation:
    """The one evaluation in a log.

    Raises:
        ValueError: no log, no ``Average episode pddl_success`` line, or
            several evaluations (named by line and time).
    """
    evaluations = [e for e in read_evaluations(path) if "pddl_success" in e.metrics]
    if not evaluations:
        raise ValueError(
            f"{path!r} holds no 'Average episode pddl_success' line; is it the "
            "log_file of a finished hab/* evaluation?"
        )
    if len(evaluations) > 1:
        starts = ", ".join(
            f"line {e.line}" + (f" ({e.started})" if e.started else "") for e in evaluations
        )
        raise ValueError(
            f"{path!r} holds {len(evaluations)} evaluations ({starts}); the report shows one "
            "per log: move the log aside before evaluating again, or give each evaluation "
            "its own habitat_baselines.log_file"
        )
    return evaluations[0]


def stage_success(metrics: Dict[str, float]) -> Stages:
    """``{stage: success, ..., "full": pddl_success}``, stages in order."""
    out: Stages = {}
    for key, value in metrics.items():
        match = _STAGE.match(key)
        if match:
            out[int(match.group(1)) + (0.5 if match.group(2) else 0.0)] = value
    out = dict(sorted(out.items()))
    out[FULL] = metrics["pddl_success"]
    return out


def stage_name(stage: Union[float, str]) -> str:
    """``0.5`` -> ``"0.5"``, ``1.0`` -> ``"1"``, ``"full"`` as it is."""
    if isinstance(stage, str):
        return stage
    return f"{stage:g}"


def split_run_name(name: str) -> Tuple[str, str]:
    """``hab/tidy_house_nonav`` -> ``("tidy_house", "TP-SRL(NoNav)")``."""
    if name not in RUN_NAMES:
        raise ValueError(f"run name {name!r} is not a HAB evaluation; allowed: {list(RUN_NAMES)}")
    stem = name[len("hab/") :]
    for suffix, method in sorted(METHODS.items(), key=lambda m: -len(m[0])):
        if suffix and stem.endswith(suffix):
            return stem[: -len(suffix)], method
    return stem, METHODS[""]


def _percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _stages_of(results: Dict[str, Evaluation]) -> List[float]:
    found = {k for e in results.values() for k in stage_success(e.metrics) if k != FULL}
    return sorted(float(k) for k in found)


def markdown_table(results: Dict[str, Evaluation]) -> str:
    """One row per run: its episodes, success (%) after each stage, the full
    task, and the paper's numbers for that scenario and method."""
    stages = _stages_of(results)
    header = ["scenario", "method", "episodes"] + [stage_name(s) for s in stages]
    header += ["full task", "paper"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, evaluation in results.items():
        scenario, method = split_run_name(name)
        success = stage_success(evaluation.metrics)
        reference = PAPER_REFERENCE.get((scenario, method), {})
        paper = ", ".join(f"{stage_name(k)}: {_percent(v)}" for k, v in reference.items())
        episodes = "-" if evaluation.episodes is None else str(evaluation.episodes)
        cells = [scenario, method, episodes] + [_percent(success.get(s)) for s in stages]
        cells += [_percent(success[FULL]), paper or "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(results: Dict[str, Evaluation], path: str) -> None:
    """Figure 6 layout: a panel per scenario, success (%) against stage, with
    each panel's legend (runs, their episodes, the paper's marks) below it,
    where it covers no point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    scenarios = [s for s in SCENARIOS if any(split_run_name(n)[0] == s for n in results)]
    fig, axes = plt.subplots(1, len(scenarios), figsize=(5 * len(scenarios), 4.2), squeeze=False)
    for ax, scenario in zip(axes[0], scenarios):
        runs = {n: e for n, e in results.items() if split_run_name(n)[0] == scenario}
        stages = _stages_of(runs)
        full_x = (stages[-1] if stages else 0.0) + 1.0  # "full" after the last stage

        def x_of(k: Union[float, str], full_x: float = full_x) -> float:
            return full_x if k == FULL else float(k)

        marked = False
        for name, evaluation in runs.items():
            method = split_run_name(name)[1]
            success = stage_success(evaluation.metrics)
            episodes = "?" if evaluation.episodes is None else evaluation.episodes
            ax.plot(
                [x_of(k) for k in success],
                [100 * v for v in success.values()],
                marker="o",
                color=COLOURS[method],
                label=f"{method}, {episodes} episodes",
            )
            for k, v in PAPER_REFERENCE.get((scenario, method), {}).items():
                marked = True
                ax.scatter(
                    [x_of(k)],
                    [100 * v],
                    marker="*",
                    s=160,
                    color=COLOURS[method],
                    edgecolors="black",
                    zorder=3,
                )
        handles, labels = ax.get_legend_handles_labels()
        if marked:
            star = Line2D([], [], marker="*", linestyle="", markersize=12, color="white")
            star.set_markeredgecolor("black")
            handles.append(star)
            labels.append("paper (VER Figure 6), in its method's colour")
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.24), fontsize=8)
        ax.set_xticks(stages + [full_x])
        ax.set_xticklabels([stage_name(s) for s in stages] + ["full"])
        ax.set_ylim(-4, 104)
        ax.set_title(scenario.replace("_", " ").title())
        ax.set_xlabel("stage (0.5: object 1 held, 1: object 1 placed, ...)")
        ax.set_ylabel("success (%)")
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    write_atomically(path, lambda out: fig.savefig(out, format="png", dpi=120, bbox_inches="tight"))
    plt.close(fig)


def write_report(runs: Sequence[Tuple[str, str]], out_dir: str) -> Dict[str, Evaluation]:
    """Read ``(run name, log path)`` pairs; write ``stage_success.md`` and ``.png``."""
    results = {}
    for name, path in runs:
        split_run_name(name)
        results[name] = parse_eval_log(path)
    table = markdown_table(results).encode()
    write_atomically(os.path.join(out_dir, TABLE_FILE), lambda out: out.write(table))
    plot(results, os.path.join(out_dir, PLOT_FILE))
    return results


TABLE_FILE = "stage_success.md"
PLOT_FILE = "stage_success.png"


def _parse_run(text: str) -> Tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(
            f"--run {text!r}: expected NAME=LOG, "
            "e.g. hab/tidy_house=outputs/hab/tidy_house/eval.log"
        )
    return name, path


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m habitat_ver.tools.hab_stage_report", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--run",
        action="append",
        type=_parse_run,
        required=True,
        help="NAME=LOG: a hab/* config name and its evaluation log",
    )
    parser.add_argument("--out", default="outputs/hab/report", help="output folder")
    args = parser.parse_args(argv)
    try:
        results = write_report(args.run, args.out)
    except (ValueError, OSError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    print(markdown_table(results), end="")
    table, png = (os.path.join(args.out, name) for name in (TABLE_FILE, PLOT_FILE))
    print(f"wrote {table} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
