"""Markdown tables of the probes, rendered from records: step time per HAB
arrangement, the learner defaults under contention, env start-up and the
policy's ``act`` at VER's batch sizes."""

from typing import Any, Dict, List, Optional

import records
from tables import num, run_label, table

Record = Dict[str, Any]
EMPTY = "No record of this workload yet.\n"


def _newest(all_records: List[Record], workload: str, **settings: Any) -> Optional[Record]:
    found = records.of_workload(all_records, workload, **settings)
    return found[-1] if found else None


def spread(record: Record) -> float:
    """Slowest arrangement's step time over the fastest's."""
    rates = [s["steps_per_s"] for s in record["systems"].values()]
    return max(rates) / min(rates)


def arrangements_table(all_records: List[Record]) -> str:
    """Steps/s of one pick env on each arrangement alone (the robot standing
    still), from the newest such run."""
    record = _newest(all_records, "hab_arrangements", action="zero")
    if record is None:
        return EMPTY
    fastest = max(s["steps_per_s"] for s in record["systems"].values())
    rows = [
        [f"`{scene[len('hab_ver_') :]}`", s["split"], num(s["steps_per_s"])]
        + [num(1000 / s["steps_per_s"], ".2f"), num(fastest / s["steps_per_s"], ".2f") + "x"]
        for scene, s in record["systems"].items()
    ]
    header = ["arrangement", "split", "steps/s", "ms per step", "vs fastest"]
    return table(header, rows) + f"\nRun: {run_label(record)}.\n"


def spreads_table(all_records: List[Record]) -> str:
    """The slowest arrangement over the fastest, per run and action."""
    rows = [
        [record["settings"]["action"], f"{spread(record):.2f}x", run_label(record)]
        for record in records.of_workload(all_records, "hab_arrangements")
    ]
    return table(["action", "slowest / fastest", "run"], rows) if rows else EMPTY


CONTENTION_NAMES = {
    "ver_threads_1": "`ver`, `num_threads=1`",
    "ver_threads_2": "`ver`, `num_threads=2`",
    "ver_auto": "`ver`, `auto` (default)",
    "appo_default": "`appo`, default layout",
    "appo_per_env": "`appo`, one worker per env",
}


def contention_table(all_records: List[Record]) -> str:
    """Per phase and system: steps/s, each update's learn seconds, threads."""
    record = _newest(all_records, "contention")
    if record is None:
        return EMPTY
    rows = []
    for key, s in record["systems"].items():
        phase, system = key.split("/", 1)
        threads = sorted({int(t) for t in s["learner_threads"]})
        rows.append(
            [
                phase,
                CONTENTION_NAMES.get(system, system),
                num(s["steps_per_s"]),
                ", ".join(f"{x:.2f}" for x in s["learn_s"]),
                " or ".join(str(t) for t in threads),
            ]
        )
    header = ["phase", "system", "steps/s", "learn s per update", "learner threads"]
    return table(header, rows) + f"\nRun: {run_label(record)}.\n"


def startup_table(all_records: List[Record]) -> str:
    """Seconds until N env workers are built and reset, and the ratio to one."""
    record = _newest(all_records, "env_startup")
    if record is None:
        return EMPTY
    seconds = record["metrics"]["seconds"]
    envs = sorted(seconds, key=int)
    one = seconds.get("1")
    rows = [
        ["built and reset (s)"] + [num(seconds[n]) for n in envs],
        ["ratio to one env"] + [num(one and seconds[n] / one, ".2f") for n in envs],
    ]
    return table(["envs", *envs], rows) + f"\nRun: {run_label(record)}.\n"


# policy_act.py's variants, as the table names them.
ACT_VARIANTS = {
    "channels_last": "channels-last",
    "autocast": "bf16 autocast",
    "compile": "torch.compile (inductor, dynamic batch)",
}


def policy_act_table(all_records: List[Record]) -> str:
    """The policy's ``act``: eager ms per call, and each variant's time over eager."""
    record = _newest(all_records, "policy_act")
    if record is None:
        return EMPTY
    m = record["metrics"]
    batches = [str(b) for b in m["batches"]]
    rows = [["eager (what the trainers run), ms"] + [num(m["eager_ms"][b], ".2f") for b in batches]]
    for variant, by_batch in m["x_eager"].items():
        name = ACT_VARIANTS.get(variant, variant)
        rows.append([f"{name}, x eager"] + [num(by_batch[b], ".2f") for b in batches])
    return table(["envs per call", *batches], rows) + f"\nRun: {run_label(record)}.\n"
