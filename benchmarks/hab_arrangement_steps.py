"""How much does an env step cost on each HAB arrangement?  (not a test)

VER gains over lock-step where envs step at different
speeds; on HAB the speed differs with the scene (furniture to render and to
collide with).  For every arrangement ``make_hab_dataset`` built (train and
val), this steps one env of the pick workload (``trainer_sps.py --workloads
pick``: ``rearrange/ver_pick`` with :data:`hab_skill_learning.PICK_ON_A_CPU`)
on that arrangement alone, in its own worker answered at once with the zero
action (:func:`wait_bound.env_ceiling`: no policy, no learning; the robot
stands still, so every scene does the same work: a sampled action made the
same scene's step time differ by up to 1.8x between runs, with where the
robot drove and what its arm hit), and reports
its steps/s, the step time and the ratio of the slowest arrangement's step
time to the fastest's.  JSON and markdown go to ``benchmarks/results/``.

    python -m habitat_ver.tools.make_hab_dataset --assets ../shared/habitat-data
    .venv/bin/python benchmarks/hab_arrangement_steps.py --seconds 10
"""

import argparse
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hab_skill_learning
import sps_report
import wait_bound

ROOT = Path(__file__).resolve().parents[1]
SCENE_CONFIG = ROOT / "data" / "hab_ver" / "hab_ver.scene_dataset_config.json"


def arrangements(scene_config: Path) -> Dict[str, List[str]]:
    """The scenes of the generated data by split (train, val), in the data's order."""
    from habitat_ver.tools import hab_scene

    built = set(json.loads(scene_config.read_text())["navmesh_instances"])
    return {
        split: [hab_scene.scene_name(a) for a in names if hab_scene.scene_name(a) in built]
        for split, names in (
            ("train", hab_scene.TRAIN_ARRANGEMENTS),
            ("val", hab_scene.VAL_ARRANGEMENTS),
        )
    }


def spread(rows: List[Dict[str, Any]]) -> float:
    """The slowest arrangement's step time over the fastest's."""
    times = [row["step_ms"] for row in rows]
    return max(times) / min(times)


def markdown(rows: List[Dict[str, Any]]) -> str:
    fastest = min(row["step_ms"] for row in rows)
    lines = [
        "| arrangement | split | steps/s (1 env) | ms per step | vs fastest |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| `{row['scene']}` | {row['split']} | {row['steps_per_s']:.1f} | "
            f"{row['step_ms']:.2f} | {row['step_ms'] / fastest:.2f}x |"
        )
    lines.append(f"\nSlowest over fastest step time: {spread(rows):.2f}x")
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="stepping time per scene")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "hab_arrangements"))
    args = parser.parse_args(argv)
    if not SCENE_CONFIG.exists():
        parser.error(
            f"{SCENE_CONFIG.relative_to(ROOT)} is missing: python -m "
            "habitat_ver.tools.make_hab_dataset --assets ../shared/habitat-data (docs/HAB.md)"
        )
    os.chdir(ROOT)  # the configs read data/ relative to the working directory
    rows = []
    for split, scenes in arrangements(SCENE_CONFIG).items():
        for scene in scenes:
            overrides = hab_skill_learning.PICK_ON_A_CPU + [
                "habitat_baselines.num_environments=1",
                f"habitat.dataset.split={split}",
                f"habitat.dataset.content_scenes=[{scene}]",
            ]
            ceiling = wait_bound.env_ceiling(
                hab_skill_learning.CONFIG, overrides, args.seconds, zero_action=True
            )
            sps = ceiling["steps_per_s"]
            rows.append(dict(scene=scene, split=split, steps_per_s=sps, step_ms=1000.0 / sps))
            print(f"{scene} ({split}): {sps:.1f} steps/s", flush=True)
    report = dict(
        date=datetime.datetime.now().isoformat(timespec="seconds"),
        git=sps_report.git_sha(),
        load=os.getloadavg(),
        config=hab_skill_learning.CONFIG,
        overrides=hab_skill_learning.PICK_ON_A_CPU,
        seconds=args.seconds,
        arrangements=rows,
        spread=spread(rows),
    )
    from habitat_ver.common.atomic import write_atomically

    out = Path(args.out)
    for suffix, text in ((".json", json.dumps(report, indent=2) + "\n"), (".md", markdown(rows))):
        data = text.encode()
        write_atomically(str(out.with_suffix(suffix)), lambda f, data=data: f.write(data))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
