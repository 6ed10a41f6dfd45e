"""The TP-SRL evaluations' success per stage, as JSON for a record (not a test).

Reads the evaluation logs of ``hab/*`` runs with ``hab_stage_report``'s
parser (one evaluation per log) and writes, per run, the episodes evaluated
and the ``Average episode`` metrics, so that ``python -m benchmarks report``
renders the stage tables of docs/HAB.md from the records:

    python -m benchmarks run hab_stages -- --kind oracle \\
        --run hab/tidy_house_oracle=outputs/hab/tidy_house_oracle/eval.log
"""

import argparse
import json
from pathlib import Path

from habitat_ver.tools.hab_stage_report import _parse_run, parse_eval_log, split_run_name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kind", required=True, choices=("oracle", "learned"))
    parser.add_argument("--run", action="append", type=_parse_run, required=True)
    parser.add_argument("--out", type=Path, required=True, help="JSON")
    args = parser.parse_args()
    runs = {}
    for name, log in args.run:
        split_run_name(name)
        evaluation = parse_eval_log(log)
        runs[name] = {"episodes": evaluation.episodes, "metrics": evaluation.metrics}
    args.out.write_text(json.dumps({"kind": args.kind, "runs": runs}, indent=1))
    print(f"json: {args.out}")


if __name__ == "__main__":
    main()
