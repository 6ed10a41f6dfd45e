"""``python -m benchmarks report``: the docs' tables and pictures, from the records.

A table lives in a doc between two markers,

    <!-- report:NAME -->
    ...what :data:`BLOCKS` [NAME] renders from the committed records...
    <!-- /report:NAME -->

and :func:`render_doc` replaces what stands between them.  A doc whose text
differs from what the report writes is out of date (``--check``;
``tests/benchmarks/test_report.py`` runs it on the committed docs).
"""

import re
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import learning_tables
import plots
import probe_tables
import records
import tables
from workloads import WORKLOADS

Record = Dict[str, Any]
ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/BENCHMARKS.md", "docs/HAB.md")
IMAGES = ROOT / "docs" / "img"
TITLES = {name: w.title for name, w in WORKLOADS.items()}
SHORT_TITLES = {
    "wait_bound": "(c) wait-bound, 16 envs",
    "doom_a": "(a) My Way Home, 16 envs",
    "doom_b": "(b) mixed Doom + stragglers, 16 envs",
    "pointnav": "PointNav, 8 envs",
    "pointnav_mixed": "PointNav, two scenes, 2 envs",
    "pick": "HAB pick",
}
Render = Callable[[List[Record]], str]
BLOCKS: Dict[str, Render] = {
    **{
        name: partial(tables.sps_table, workload=name)
        for name in ("wait_bound", "doom_a", "doom_b", "pointnav", "pointnav_mixed")
    },
    "pick_n4": partial(tables.sps_table, workload="pick", envs=4),
    "pick_n8": partial(tables.sps_table, workload="pick", envs=8),
    "summary": partial(tables.summary_table, titles=SHORT_TITLES),
    "wait_bound_compact": partial(tables.compact_sps_table, workload="wait_bound"),
    "hab_arrangements": probe_tables.arrangements_table,
    "hab_arrangement_spreads": probe_tables.spreads_table,
    "contention": probe_tables.contention_table,
    "ranks_vs_envs": tables.ranks_table,
    "env_startup": probe_tables.startup_table,
    "policy_act": probe_tables.policy_act_table,
    "sample_efficiency": learning_tables.sample_efficiency_table,
    "pointnav_blind": learning_tables.pointnav_blind_table,
    "hab_skills": learning_tables.skills_table,
    "hab_skill_detail": learning_tables.skill_detail_table,
    "hab_oracle_stages": partial(learning_tables.stages_table, kind="oracle"),
    "hab_learned_stages": partial(learning_tables.stages_table, kind="learned"),
    "demo": learning_tables.demo_table,
}
# The pictures: file in docs/img -> (workload, settings, title).
PICTURES: Dict[str, Tuple[str, Dict[str, Any], str]] = {
    "bench_wait_bound.png": ("wait_bound", {}, TITLES["wait_bound"]),
    "bench_doom_a.png": ("doom_a", {}, TITLES["doom_a"]),
    "bench_doom_b.png": ("doom_b", {}, TITLES["doom_b"]),
    "bench_pointnav.png": ("pointnav", {}, TITLES["pointnav"]),
    "bench_pointnav_mixed.png": ("pointnav_mixed", {}, TITLES["pointnav_mixed"]),
    "bench_pick_n4.png": ("pick", {"envs": 4}, "HAB pick (Table 1), 4 envs"),
    "bench_pick_n8.png": ("pick", {"envs": 8}, "HAB pick (Table 1), 8 envs"),
    "bench_sample_efficiency.png": (
        "sample_efficiency",
        {},
        "CartPole with stragglers, mean over seeds",
    ),
}
# The HAB skills' learning curves (plots.skill_curves_png).
SKILL_CURVES = "hab_skill_curves.png"
MARKER = re.compile(
    r"(<!-- report:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /report:(?P=name) -->)", re.S
)


def render_doc(text: str, all_records: List[Record], blocks: Dict[str, Render] = BLOCKS) -> str:
    """``text`` with every marked block rendered again from ``all_records``.

    Args:
        text: a markdown document.
        all_records: the records the blocks are rendered from.
        blocks: block name -> its renderer.

    Returns:
        The document, changed between the markers only.

    Raises:
        KeyError: a marker names a block that ``blocks`` does not have.
    """

    def block(match: "re.Match[str]") -> str:
        name = match.group("name")
        if name not in blocks:
            raise KeyError(f"no report block named {name!r}; known: {sorted(blocks)}")
        return f"{match.group(1)}{blocks[name](all_records)}{match.group(4)}"

    return MARKER.sub(block, text)


def load(committed: bool = False) -> List[Record]:
    """The records in ``benchmarks/results/`` (only those git tracks where
    ``committed``), with the skill-learning script's own JSON."""
    import convert

    only = records.tracked() if committed else None
    return records.load_all(records.RESULTS, raw=convert.raw_record, only=only)


def stale_docs(all_records: List[Record], root: Path = ROOT) -> List[str]:
    """The docs whose marked blocks differ from what the report writes."""
    return [
        doc
        for doc in DOCS
        if render_doc((root / doc).read_text(), all_records) != (root / doc).read_text()
    ]


def write_docs(all_records: List[Record], root: Path = ROOT) -> List[str]:
    """Render every doc's blocks in place; the docs that changed."""
    changed = stale_docs(all_records, root)
    for doc in changed:
        path = root / doc
        path.write_text(render_doc(path.read_text(), all_records))
    return changed


def draw(all_records: List[Record], folder: Path = IMAGES) -> List[Path]:
    """Every picture of :data:`PICTURES` that has records; their paths."""
    drawn = []
    for name, (workload, settings, title) in PICTURES.items():
        if plots.sps_png(all_records, workload, title, folder / name, **settings):
            drawn.append(folder / name)
    if plots.skill_curves_png(all_records, folder / SKILL_CURVES):
        drawn.append(folder / SKILL_CURVES)
    return drawn
