"""Per-stage success of HAB evaluations, as in the VER paper's Figure 6.

Reads the evaluation logs of ``hab/*`` runs (habitat-baselines writes
``Average episode pddl_stage_goals.stage_<s>_success: <v>`` and
``Average episode pddl_success: <v>`` to ``habitat_baselines.log_file``) and
writes a Markdown table and a plot of success after each interaction stage,
one panel per scenario, with the paper's numbers drawn as reference marks.

Stage ``s`` of habitat-lab's PDDL problems is reached after interaction
``2 s`` (``stage_0_5``: the first pick, ``stage_1``: the first place, ...);
the last column is the full task (``pddl_success``).

    python -m habitat_ver.tools.hab_stage_report \\
        --run hab/tidy_house=outputs/hab/tidy_house/eval.log \\
        --run hab/tidy_house_nonav=outputs/hab/tidy_house_nonav/eval.log \\
        --out outputs/hab/report
"""

import argparse
import os
import re
import sys
from typing import Dict, List, Optional, Sequence, Tuple, Union

from habitat_ver.common.atomic import write_atomically

SCENARIOS = ("tidy_house", "prepare_groceries", "set_table")
METHODS = {"": "TP-SRL", "_nonav": "TP-SRL(NoNav)", "_oracle": "oracle skills"}
RUN_NAMES = tuple(f"hab/{s}{m}" for s in SCENARIOS for m in METHODS)
FULL = "full"
# Success per stage: an interaction number (int) or FULL, the whole task.
Stages = Dict[Union[int, str], float]

# VER paper section 6 (Figure 6 and text): success after an interaction
# (int) or of the full task, per (scenario, method).
PAPER_REFERENCE: Dict[Tuple[str, str], Stages] = {
    ("tidy_house", "TP-SRL"): {FULL: 0.32},
    ("tidy_house", "TP-SRL(NoNav)"): {1: 0.50, 2: 0.20},
    ("prepare_groceries", "TP-SRL"): {FULL: 0.05},
    ("prepare_groceries", "TP-SRL(NoNav)"): {1: 0.15},
    ("set_table", "TP-SRL"): {2: 0.075},
    ("set_table", "TP-SRL(NoNav)"): {1: 0.04},
}

_LINE = re.compile(r"Average episode (\S+): ([-+0-9.eE]+|nan)\s*$")
_STAGE = re.compile(r"^pddl_stage_goals\.stage_(\d+)(?:_(5))?_success$")


def parse_eval_log(path: str) -> Dict[str, float]:
    """The last ``Average episode <key>: <value>`` of every key in a log."""
    metrics: Dict[str, float] = {}
    if not os.path.isfile(path):
        raise ValueError(
            f"no evaluation log at {path!r}; run the evaluation first (python -m "
            "habitat_baselines.run --config-name=hab/<scenario>), which writes its "
            "habitat_baselines.log_file there"
        )
    with open(path) as f:
        for line in f:
            match = _LINE.search(line)
            if match:
                metrics[match.group(1)] = float(match.group(2))
    if "pddl_success" not in metrics:
        raise ValueError(
            f"{path!r} holds no 'Average episode pddl_success' line; is it the "
            "log_file of a finished hab/* evaluation?"
        )
    return metrics


def stage_success(metrics: Dict[str, float]) -> Stages:
    """``{interaction: success, ..., "full": pddl_success}``."""
    out: Stages = {}
    for key, value in metrics.items():
        match = _STAGE.match(key)
        if match:
            interaction = 2 * int(match.group(1)) + (1 if match.group(2) else 0)
            out[interaction] = value
    out = dict(sorted(out.items()))
    out[FULL] = metrics["pddl_success"]
    return out


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


def markdown_table(results: Dict[str, Stages]) -> str:
    """One row per run: success (%) after each interaction, the full task,
    and the paper's numbers for that scenario and method."""
    width = max((k for r in results.values() for k in r if isinstance(k, int)), default=0)
    header = ["scenario", "method"] + [str(i) for i in range(1, width + 1)] + ["full task", "paper"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, stages in results.items():
        scenario, method = split_run_name(name)
        reference = PAPER_REFERENCE.get((scenario, method), {})
        paper = ", ".join(
            f"{'full' if k == FULL else k}: {_percent(v)}" for k, v in reference.items()
        )
        cells = [scenario, method] + [_percent(stages.get(i)) for i in range(1, width + 1)]
        cells += [_percent(stages[FULL]), paper or "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(results: Dict[str, Stages], path: str) -> None:
    """Figure 6 layout: a panel per scenario, success (%) against interaction."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = [s for s in SCENARIOS if any(split_run_name(n)[0] == s for n in results)]
    fig, axes = plt.subplots(1, len(scenarios), figsize=(5 * len(scenarios), 3.5), squeeze=False)
    for ax, scenario in zip(axes[0], scenarios):
        runs = {n: r for n, r in results.items() if split_run_name(n)[0] == scenario}
        width = max(k for r in runs.values() for k in r if isinstance(k, int))

        def x_of(k: Union[int, str], width: int = width) -> int:
            return k if isinstance(k, int) else width + 1  # FULL after the last one

        for index, (name, stages) in enumerate(runs.items()):
            method = split_run_name(name)[1]
            xs = [x_of(k) for k in stages]
            (line,) = ax.plot(xs, [100 * v for v in stages.values()], marker="o", label=method)
            for k, v in PAPER_REFERENCE.get((scenario, method), {}).items():
                ax.scatter(
                    [x_of(k)],
                    [100 * v],
                    marker="*",
                    s=120,
                    color=line.get_color(),
                    edgecolors="black",
                    zorder=3,
                    label="paper" if index == 0 else None,
                )
        ax.set_xticks(list(range(1, width + 2)))
        ax.set_xticklabels([str(i) for i in range(1, width + 1)] + ["full"])
        ax.set_ylim(0, 100)
        ax.set_title(scenario.replace("_", " ").title())
        ax.set_xlabel("interaction")
        ax.set_ylabel("success (%)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    write_atomically(path, lambda out: fig.savefig(out, format="png", dpi=120))
    plt.close(fig)


def write_report(runs: Sequence[Tuple[str, str]], out_dir: str) -> Dict[str, Stages]:
    """Read ``(run name, log path)`` pairs; write ``stage_success.md`` and ``.png``."""
    results = {}
    for name, path in runs:
        split_run_name(name)
        results[name] = stage_success(parse_eval_log(path))
    table = markdown_table(results).encode()
    write_atomically(os.path.join(out_dir, "stage_success.md"), lambda out: out.write(table))
    plot(results, os.path.join(out_dir, "stage_success.png"))
    return results


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
