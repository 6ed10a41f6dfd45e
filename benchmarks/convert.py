"""Each benchmark script's own JSON, made into :mod:`records` records.

``python -m benchmarks run`` runs a script and passes its JSON here; the
provenance (commit, load, start and end) comes from the script's JSON where it
has it, and the caller fills in what it does not.
"""

from typing import Any, Dict, List, Optional

import records

Record = Dict[str, Any]
# trainer_sps.py's workload names -> ours.
TRAINER_SPS_WORKLOADS = {"homogeneous": "doom_a", "heterogeneous": "doom_b"}
# Per-system fields of trainer_sps.py kept as they are.
SPS_FIELDS = ("collect_s", "learn_s", "learner_threads", "limit_fraction", "ceiling_fraction")


def _provenance(raw: Dict[str, Any], cpus: Optional[int]) -> Dict[str, Any]:
    before = raw.get("load_before")
    before = list(before) if isinstance(before, (list, tuple)) else before
    return dict(
        commit=raw.get("git_sha") or raw.get("git"),
        machine={"platform": raw.get("machine"), "cpus": cpus},
        load={"before": before, "after": raw.get("load_after")},
        quiet=records.is_quiet(before, cpus) if isinstance(before, list) and cpus else None,
        start=raw.get("started"),
        end=raw.get("finished"),
    )


def sps_system(result: Dict[str, Any]) -> Dict[str, Any]:
    """One system's result of ``trainer_sps.py`` as a record's system entry."""
    if "steady_sps" not in result:
        return {"error": result.get("error", "no steady rate")}
    cpu = result.get("cpu") or {}
    entry = {"steps_per_s": result["steady_sps"]}
    entry.update({k: result[k] for k in SPS_FIELDS if result.get(k) is not None})
    if cpu.get("ms_per_step"):
        entry["cpu_ms_per_step"] = cpu["ms_per_step"]
        entry["cores_used"] = cpu.get("cores_used")
        entry["idle_share"] = cpu.get("machine_idle_share")
        entry["lost_workers"] = cpu.get("workers_exited") or {}
    memory = result.get("memory") or {}
    if memory:
        entry["memory_uss_mb"] = {k: v["uss_mb"] for k, v in memory.items()}
    return entry


def from_trainer_sps(raw: Dict[str, Any]) -> List[Record]:
    """One record per workload of a ``trainer_sps.py`` report."""
    out = []
    for name, entry in raw["workloads"].items():
        info = entry["workload"]
        settings = {
            "config": info["config"],
            "envs": info["envs"],
            "num_steps": info["num_steps"],
            "steps": raw.get("settings", {}).get("steps"),
        }
        systems = {s: sps_system(r) for s, r in entry["results"].items()}
        record = records.make(
            TRAINER_SPS_WORKLOADS.get(name, name),
            settings,
            systems,
            **_provenance(raw, raw.get("cpus")),
        )
        record["metrics"] = {
            "limit_sps": info.get("limit_sps"),
            "env_ceiling_sps": (info.get("env_ceiling") or {}).get("steps_per_s"),
        }
        out.append(record)
    return out


def success_metric(metrics: Dict[str, float]) -> Optional[str]:
    """The skill's success metric: the one whose name ends in ``_success``."""
    found = sorted(k for k in metrics if k.endswith("_success"))
    return found[0] if found else None


def from_skill_learning(raw: Dict[str, Any]) -> Record:
    """A ``hab_skill_learning.py`` (or older ``hab_pick_learning``) report."""
    train = raw.get("train") or {}
    cpu = train.get("cpu") if isinstance(train.get("cpu"), dict) else {}
    system: Dict[str, Any] = {
        "steps": train.get("step"),
        "wall_s": train.get("wall_time") or train.get("wall_s"),
        "untrained": (raw.get("untrained") or {}).get("metrics", {}),
        "trained": (raw.get("trained") or {}).get("metrics", {}),
    }
    if cpu.get("ms_per_step"):
        system["cpu_ms_per_step"] = cpu["ms_per_step"]
        system["cores_used"] = cpu.get("cores_used")
    source = raw.get("init_from")
    if source:
        # Trained on from another run's weights (--init-from): the steps behind
        # them, over every stage (records before stages chained: the checkpoint's).
        system["started_from_steps"] = source.get("steps_in_all", source.get("step"))
    provenance = _provenance(
        {**raw, "started": raw.get("date", "").replace("T", " ") or None}, raw.get("cpus")
    )
    settings = {
        "config": raw.get("config"),
        # The episodes evaluated (the val split may hold fewer than asked).
        "episodes": (raw.get("trained") or {}).get("episodes") or raw.get("episodes"),
        # Each evaluated this many times (older records: once).
        "evals_per_episode": (raw.get("trained") or {}).get("evals_per_episode", 1),
        "budget": raw.get("budget"),
        "overrides": raw.get("overrides"),
    }
    # A training run lasts long enough for others to start beside it: quiet
    # only if, over its steady window, the machine was busy with little
    # besides the run's own processes.
    cores, idle = cpu.get("cores_used"), cpu.get("machine_idle_share")
    if provenance["quiet"] and cores is not None and idle is not None and raw.get("cpus"):
        others = (1.0 - idle) * raw["cpus"] - cores
        provenance["quiet"] = others < 0.5
    record = records.make("skill_learning", settings, {"ver": system}, **provenance)
    if raw.get("curves"):
        record["metrics"] = {"curves": raw["curves"]}
    return record


def from_sample_efficiency(raw: Dict[str, Any]) -> Record:
    """A ``sample_efficiency.py`` report: per system and seed, the learning
    figures and the run's speed; the curves in ``metrics``."""
    systems, curves = {}, {}
    for name, entry in raw["systems"].items():
        seeds = {}
        for seed, run in entry["seeds"].items():
            cpu = run.get("cpu") or {}
            evaluation = run.get("eval") or {}
            seeds[seed] = {
                "steps_per_s": run.get("steady_sps"),
                "steps_to_threshold": run.get("steps_to_threshold"),
                "idle_share": cpu.get("machine_idle_share"),
                "cpu_ms_per_step": cpu.get("ms_per_step"),
                **{k: run[k] for k in ("final_return", "final_success", "final_spl") if k in run},
                **{f"val_{k}": evaluation[k] for k in ("success", "spl") if k in evaluation},
            }
            curves[f"{name}/{seed}"] = run.get("reward_curve")
        systems[name] = {"config": entry["config"], "seeds": seeds}
    settings = {k: raw.get(k) for k in ("task", "steps", "threshold", "stragglers", "overrides")}
    workload = "pointnav_blind" if raw.get("task") == "pointnav_blind" else "sample_efficiency"
    record = records.make(workload, settings, systems, **_provenance(raw, raw.get("cpus")))
    record["metrics"] = {"curves": curves}
    return record


def from_contention(raw: Dict[str, Any]) -> Record:
    """A ``learner_contention.py`` report: one system entry per (phase, system)."""
    systems = {}
    for run in raw["runs"]:
        systems[f"{run['phase']}/{run['system']}"] = {
            "steps_per_s": run["steady_sps"],
            "learn_s": run["learn_s"],
            "learner_threads": run["learner_threads"],
            "load": [run.get("load_before"), run.get("load_after")],
        }
    settings = {"config": "doom/ddppo_wait_bound", "steps": raw.get("steps")}
    provenance = _provenance({**raw, "git_sha": raw.get("sha")}, raw.get("cores"))
    return records.make("contention", settings, systems, **provenance)


def from_arrangements(raw: Dict[str, Any], action: str = "zero") -> Record:
    """A ``hab_arrangement_steps.py`` report: steps/s of each arrangement alone."""
    systems = {
        row["scene"]: {"split": row["split"], "steps_per_s": row["steps_per_s"]}
        for row in raw["arrangements"]
    }
    settings = {"config": raw["config"], "seconds": raw["seconds"], "action": action}
    started = raw["date"].replace("T", " ")
    provenance = _provenance({**raw, "load_before": raw.get("load"), "started": started}, None)
    return records.make("hab_arrangements", settings, systems, **provenance)


def from_policy_act(raw: Dict[str, Any]) -> Record:
    """A ``policy_act.py`` report: eager ms per ``act`` by batch, and each
    variant's time over eager's."""
    settings = {k: raw.get(k) for k in ("config", "policy", "device", "threads", "calls")}
    record = records.make("policy_act", settings, {}, commit=raw.get("git_sha"))
    eager = raw["ms_per_act"]["eager"]
    record["metrics"] = {
        "batches": [int(b) for b in eager],
        "eager_ms": {str(b): v for b, v in eager.items()},
        "x_eager": raw["ratio_to_eager"],
    }
    return record


def from_env_startup(raw: Dict[str, Any]) -> Record:
    """An ``env_startup.py`` report: median seconds to built and reset, per
    number of envs."""
    rounds = len(next(iter(raw["runs"].values()), []))
    settings = {"config": raw["config"], "rounds": rounds}
    record = records.make("env_startup", settings, {}, **_provenance(raw, raw.get("cpus")))
    record["metrics"] = {"seconds": {str(n): v for n, v in raw["median_reset_s"].items()}}
    return record


def from_hab_stages(raw: Dict[str, Any]) -> Record:
    """A ``hab_stages.py`` report: per ``hab/*`` run, its episodes and metrics."""
    return records.make("hab_stages", {"kind": raw["kind"]}, raw["runs"])


def from_ranks_vs_envs(raw: Dict[str, Any]) -> Record:
    """A ``ranks_vs_envs.py`` report: one system per workload and layout
    (``pointnav/2x2``: 2 ranks of 2 envs), with its steady steps/s over all
    ranks, CPU ms per env step by kind (the ranks as ``trainer``), cores
    used, the run's wall time and its ranks and envs per rank."""
    systems = {}
    for name, run in raw["runs"].items():
        if "steady_sps" not in run:
            systems[name] = {"error": run.get("error", "no steady rate"), "wall_s": run["wall_s"]}
            continue
        cpu = run.get("cpu") or {}
        systems[name] = {
            "steps_per_s": run["steady_sps"],
            "ranks": run["ranks"],
            "envs_per_rank": run["envs_per_rank"],
            "wall_s": run["wall_s"],
            "steps": run.get("steps"),
            "learner_threads": run.get("learner_threads"),
            "cpu_ms_per_step": cpu.get("ms_per_step") or {},
            "processes": cpu.get("processes") or {},
            "cores_used": cpu.get("cores_used"),
            "idle_share": cpu.get("machine_idle_share"),
            "lost_workers": cpu.get("workers_exited") or {},
        }
    settings = {**raw.get("settings", {}), "tasks": raw.get("tasks", {})}
    return records.make("ranks_vs_envs", settings, systems, **_provenance(raw, raw.get("cpus")))


def raw_record(data: Dict[str, Any]) -> Optional[Record]:
    """A record from a script's own JSON found in ``benchmarks/results/``."""
    if data.get("benchmark") in ("hab_skill_learning", "hab_pick_learning"):
        return from_skill_learning(data)
    return None
