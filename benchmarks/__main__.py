"""The benchmark tool: run a workload into a record, or render the docs from the records.

    python -m benchmarks list
    python -m benchmarks run wait_bound --systems ddppo ver ver_auto
    python -m benchmarks run pick -- --envs 4        # after --: the script's own arguments
    python -m benchmarks report                      # docs' tables and docs/img/bench_*.png
    python -m benchmarks report --check              # exit 1 if a doc is out of date

Run it from the checkout's root.  Benchmarks time things: run them on a quiet
machine, never from the tests.
"""

import argparse
import sys
from pathlib import Path
from typing import List, Optional

# The benchmarks folder is not a package: its modules import each other by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import report
import workloads


def parse(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="the workloads")
    run = verbs.add_parser("run", help="run one workload and write its record")
    run.add_argument("workload", choices=sorted(workloads.WORKLOADS))
    run.add_argument("--systems", nargs="+", default=None, help="the systems to run")
    run.epilog = "Arguments after -- go to the workload's script as they are."
    out = verbs.add_parser("report", help="render the docs' tables and pictures")
    out.add_argument(
        "--check", action="store_true", help="from the committed records; exit 1 if a doc differs"
    )
    out.add_argument("--no-pictures", action="store_true", help="tables only")
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    args.extra = argv[cut + 1 :]
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse(argv)
    if args.verb == "list":
        for name, workload in workloads.WORKLOADS.items():
            print(f"{name:18s} {workload.title} (benchmarks/{workload.script}.py)")
        return 0
    if args.verb == "run":
        for path in workloads.run(args.workload, args.systems, args.extra):
            print(f"record: {path}")
        return 0
    all_records = report.load(committed=args.check)
    if args.check:
        stale = report.stale_docs(all_records)
        for doc in stale:
            print(f"{doc}: out of date; run python -m benchmarks report")
        return 1 if stale else 0
    for doc in report.write_docs(all_records):
        print(f"wrote {doc}")
    if not args.no_pictures:
        for path in report.draw(all_records):
            print(f"drew {path.relative_to(report.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
