"""The workloads ``python -m benchmarks run`` knows, and how each is run.

Each workload is one of the scripts in this folder, called with its own
arguments (:attr:`Workload.argv`, then whatever follows ``--`` on the command
line); the script's JSON is made into records (:mod:`convert`) and written to
``benchmarks/results/`` with the run's provenance (:func:`run`).
"""

import contextlib
import io
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import convert
import records

Argv = Callable[[Path, Optional[List[str]]], List[str]]


@dataclass(frozen=True)
class Workload:
    """One workload: what it is, the script that measures it, and its records."""

    title: str  # one line, for --help and the report
    script: str  # module in benchmarks/
    argv: Argv  # the script's arguments, given its output path and --systems
    convert: Callable[[Dict[str, Any]], List[records.Record]]  # its JSON -> records
    stdout_json: bool = False  # the script prints its JSON instead of writing --out


def _trainer_sps(name: str, envs: int, steps: int) -> Argv:
    def argv(out: Path, systems: Optional[List[str]]) -> List[str]:
        args = ["--workloads", name, "--envs", str(envs), "--steps", str(steps)]
        args += ["--limit-check-seconds", "0", "--out", str(out)]
        return args + (["--variants", *systems] if systems else [])

    return argv


def _plain(*args: str, systems_flag: str = "", out: bool = True) -> Argv:
    def argv(path: Path, systems: Optional[List[str]]) -> List[str]:
        extra = [systems_flag, *systems] if systems and systems_flag else []
        return [*args, *(["--out", str(path)] if out else []), *extra]

    return argv


def _one(converter: Callable[[Dict[str, Any]], records.Record]) -> Callable:
    return lambda raw: [converter(raw)]


def _as_metrics(workload: str) -> Callable[[Dict[str, Any]], List[records.Record]]:
    """A script whose JSON is kept whole, under ``metrics``."""

    def convert_it(raw: Dict[str, Any]) -> List[records.Record]:
        record = records.make(workload, {}, {})
        record["metrics"] = raw
        return [record]

    return convert_it


TRAINER_SPS = convert.from_trainer_sps
WORKLOADS: Dict[str, Workload] = {
    "wait_bound": Workload(
        "(c) wait-bound: 16 Doom envs behind stragglers that wait",
        "trainer_sps",
        _trainer_sps("wait_bound", 16, 10240),
        TRAINER_SPS,
    ),
    "doom_a": Workload(
        "(a) ViZDoom My Way Home, every env alike",
        "trainer_sps",
        _trainer_sps("homogeneous", 16, 8192),
        TRAINER_SPS,
    ),
    "doom_b": Workload(
        "(b) four ViZDoom scenarios and stragglers",
        "trainer_sps",
        _trainer_sps("heterogeneous", 16, 8192),
        TRAINER_SPS,
    ),
    "pointnav": Workload(
        "PointNav on habitat-sim, RGB-D 128x128",
        "trainer_sps",
        _trainer_sps("pointnav", 8, 4096),
        TRAINER_SPS,
    ),
    "pointnav_mixed": Workload(
        "PointNav on two scenes of different cost",
        "trainer_sps",
        _trainer_sps("pointnav_mixed", 2, 4096),
        TRAINER_SPS,
    ),
    "pick": Workload(
        "HAB pick with VERPolicy (the VER paper's Table 1)",
        "trainer_sps",
        _trainer_sps("pick", 8, 4096),
        TRAINER_SPS,
    ),
    "hab_arrangements": Workload(
        "one pick env's steps/s on each arrangement",
        "hab_arrangement_steps",
        lambda out, systems: ["--seconds", "8", "--out", str(out.with_suffix(""))],
        _one(convert.from_arrangements),
    ),
    "sample_efficiency": Workload(
        "return against env steps on CartPole with stragglers",
        "sample_efficiency",
        _plain(),
        _one(convert.from_sample_efficiency),
    ),
    "skill_learning": Workload(
        "a HAB skill trained on habitat-sim, untrained against trained",
        "hab_skill_learning",
        lambda out, systems: ["--out", str(out.parent)],
        _one(convert.from_skill_learning),
    ),
    "hab_stages": Workload(
        "TP-SRL success per stage, from hab/* evaluation logs",
        "hab_stages",
        _plain(),
        _one(convert.from_hab_stages),
    ),
    "env_startup": Workload(
        "start-up of N env workers on habitat-sim",
        "env_startup",
        _plain("--envs", "1", "4", "8", "--rounds", "1", out=False),
        _one(convert.from_env_startup),
        stdout_json=True,
    ),
    "contention": Workload(
        "learner and appo defaults, quiet and beside a torch neighbour",
        "learner_contention",
        _plain("--steps", "4096", "--repeats", "1", systems_flag="--systems"),
        _one(convert.from_contention),
    ),
    "policy_act": Workload(
        "the policy's act at VER's batch sizes",
        "policy_act",
        _plain(out=False),
        _one(convert.from_policy_act),
        stdout_json=True,
    ),
    "ranks_vs_envs": Workload(
        "1 rank x 4 envs against 2 torchrun ranks x 2 envs, PointNav and pick",
        "ranks_vs_envs",
        _plain(systems_flag="--layouts"),
        _one(convert.from_ranks_vs_envs),
    ),
    "appo_vs_sf": Workload(
        "appo against Sample Factory on My Way Home",
        "appo_vs_sample_factory",
        _plain(),
        _as_metrics("appo_vs_sf"),
    ),
}


def _call_script(workload: Workload, argv: List[str]) -> str:
    """Run the script's ``main()`` with ``argv``; its stdout if it prints its JSON."""
    import importlib

    module = importlib.import_module(workload.script)
    saved = sys.argv
    sys.argv = [f"benchmarks/{workload.script}.py", *argv]
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured) if workload.stdout_json else _nothing():
            module.main()
    finally:
        sys.argv = saved
    return captured.getvalue()


@contextlib.contextmanager
def _nothing():
    yield


def last_json(text: str) -> Dict[str, Any]:
    """The last JSON object a script printed (after its progress lines)."""
    start = text.rfind("\n{")
    return json.loads(text[start + 1 if start >= 0 else 0 :])


def read_output(workload: Workload, out: Path, stdout: str) -> Dict[str, Any]:
    """The script's JSON: printed, written at ``out``, or (skill learning) the
    newest JSON in ``out``'s folder."""
    if workload.stdout_json:
        return last_json(stdout)
    if out.exists():
        return json.loads(out.read_text())
    written = sorted(out.parent.glob("*.json"), key=lambda p: p.stat().st_mtime)
    if not written:
        raise FileNotFoundError(f"{workload.script} wrote no JSON into {out.parent}")
    return json.loads(written[-1].read_text())


def with_provenance(
    record: records.Record, start: str, before: List[float], idle: Optional[float]
) -> records.Record:
    """``record`` with this run's provenance where its script left it out."""
    cpus = os.cpu_count() or 1
    record["commit"] = record["commit"] or records.git_sha()
    record["machine"] = records.machine()
    record["load"] = {"before": before, "after": list(os.getloadavg()), "idle_before": idle}
    record["quiet"] = records.is_quiet(before, cpus, idle)
    record["start"], record["end"] = start, records.now()
    return record


def run(
    name: str, systems: Optional[List[str]], extra: List[str], results: Path = records.RESULTS
) -> List[Path]:
    """Run workload ``name`` and write its records.

    Args:
        name: a key of :data:`WORKLOADS`.
        systems: the systems to run (None: the script's default).
        extra: the script's own arguments, appended as they are.
        results: where the records go.

    Returns:
        The paths of the records written.
    """
    workload = WORKLOADS[name]
    idle = records.idle_share()
    start, before = records.now(), list(os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{workload.script}.json"
        stdout = _call_script(workload, workload.argv(out, systems) + extra)
        raw = read_output(workload, out, stdout)
    made = [with_provenance(r, start, before, idle) for r in workload.convert(raw)]
    for record in made:
        record["settings"]["command"] = " ".join(
            ["python -m benchmarks run", name, *(["--systems", *systems] if systems else [])]
            + (["--", *extra] if extra else [])
        )
    return [records.write(r, results) for r in made]
