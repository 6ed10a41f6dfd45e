"""The benchmark tool's records and report: the committed docs are what
``python -m benchmarks report`` writes, tables render the records' numbers,
and ``run`` turns a script's JSON into a record (nothing is benchmarked)."""

import importlib
import json
import sys
import types
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
records = importlib.import_module("records")
convert = importlib.import_module("convert")
tables = importlib.import_module("tables")
learning_tables = importlib.import_module("learning_tables")
report = importlib.import_module("report")
plots = importlib.import_module("plots")
workloads = importlib.import_module("workloads")


def _record(workload, start, systems, commit="abcdef0123", **settings):
    return records.make(
        workload, settings, systems, commit=commit, start=start, quiet=True, machine={"cpus": 2}
    )


def test_the_committed_docs_are_what_the_report_writes():
    assert report.stale_docs(report.load(committed=True)) == [], "python -m benchmarks report"


def test_every_marked_block_of_the_docs_is_known_and_every_picture_is_drawn():
    text = "".join((report.ROOT / doc).read_text() for doc in report.DOCS)
    names = {m.group("name") for m in report.MARKER.finditer(text)}
    assert names and names <= set(report.BLOCKS)
    for picture in report.PICTURES:
        assert (report.IMAGES / picture).is_file(), picture


def test_a_table_holds_each_systems_newest_run_with_ratios_within_a_run():
    old = _record(
        "wait_bound",
        "2026-01-01 10:00",
        {"ddppo": {"steps_per_s": 50.0}, "appo": {"steps_per_s": 150.0}},
        envs=16,
    )
    new = _record(
        "wait_bound",
        "2026-01-02 10:00",
        {
            "ddppo": {"steps_per_s": 80.0, "collect_s": 3.0, "learn_s": 1.0},
            "ver": {
                "steps_per_s": 200.0,
                "cpu_ms_per_step": {"trainer": 2.0, "overlap_thread": 0.5, "env_workers": 1.25},
                "cores_used": 1.5,
                "idle_share": 0.25,
            },
        },
        envs=16,
    )
    new["metrics"]["limit_sps"] = 400.0
    text = tables.sps_table([old, new], "wait_bound", envs=16)
    # ver: 200 / 400 = 0.50 of the limit, 200 / 80 = 2.50x ddppo, trainer 2 + 0.5 ms;
    # appo from the older run, against that run's ddppo: 150 / 50 = 3.00.
    new_run, old_run = "2026-01-02 10:00, abcdef0, quiet |", "2026-01-01 10:00, abcdef0, quiet |"
    assert text.splitlines()[2:] == [
        "| `ddppo` | 80.0 | 0.20 | 1.00 | 3.00 / 1.00 |  |  |  |  |  | " + new_run,
        "| `ver` | 200.0 | 0.50 | 2.50 |  | 2.50 | 1.25 |  | 1.50 | 25 | " + new_run,
        "| `appo` | 150.0 | 0.38 | 3.00 |  |  |  |  |  |  | " + old_run,
    ]


def test_a_system_that_lost_a_worker_has_no_ratio():
    run = _record(
        "pick",
        "2026-01-01 10:00",
        {
            "ddppo": {"steps_per_s": 100.0},
            "upstream_ver": {"steps_per_s": 90.0, "lost_workers": {"env_workers": 1}},
        },
    )
    assert tables.ratio(run, "upstream_ver") is None
    assert "| upstream `ver` (lost a worker) | 90.0 |  |" in tables.sps_table([run], "pick")


def _skill_json(config, date, step, untrained, trained):
    return {
        "benchmark": "hab_skill_learning",
        "date": date,
        "git_sha": "1234567890",
        "cpus": 2,
        "config": config,
        "episodes": 10,
        "load_before": [0.2, 0.1, 0.1],
        "train": {"step": step, "wall_s": 1800.0, "wall_time": 1770.0},
        "untrained": {"metrics": untrained},
        "trained": {"metrics": trained},
    }


def test_the_skill_table_has_each_run_by_steps_and_its_success_metric(tmp_path):
    older = _skill_json("rearrange/ver_close_cab", "2026-01-01T10:00:00", 10, {}, {})
    newer = _skill_json(
        "rearrange/ver_close_cab",
        "2026-01-02T10:00:00",
        200_000,
        {"art_obj_success": 0.1, "reward": -1.0},
        {"art_obj_success": 0.6, "reward": 2.0},
    )
    # An earlier checkpoint of the run, evaluated after the newer one.
    earlier = _skill_json("rearrange/ver_close_cab", "2026-01-03T10:00:00", 5_000, {}, {})
    for i, data in enumerate((older, newer, earlier)):
        (tmp_path / f"hab_skill_learning_close_cab_{i}.json").write_text(json.dumps(data))
    found = records.load_all(tmp_path, raw=convert.raw_record)
    # wall 1770 s = 29.5 min -> "30" (rounded half to even of 29.5 is 30)
    lines = learning_tables.skills_table(found).splitlines()
    assert len(lines) == 5 and lines[2].startswith("| `rearrange/ver_close_cab` | 10 | 30 |  |")
    assert lines[3].startswith("| `rearrange/ver_close_cab` | 5,000 | 30 |  |")
    assert lines[4] == (
        "| `rearrange/ver_close_cab` | 200,000 | 30 | art_obj_success | 0.10 | 0.60 | 10 "
        "| 2026-01-02 10:00, 1234567, quiet |"
    )
    assert learning_tables.skills_table([]) == "No skill-learning record yet.\n"


def test_the_skill_table_counts_the_episodes_evaluated_not_those_asked(tmp_path):
    data = _skill_json("rearrange/ver_open_fridge", "2026-01-02T10:00:00", 5, {}, {})
    data["episodes"] = 20  # asked; the val split holds 7
    data["trained"]["episodes"] = data["untrained"]["episodes"] = 7
    (tmp_path / "hab_skill_learning_open_fridge_0.json").write_text(json.dumps(data))
    found = records.load_all(tmp_path, raw=convert.raw_record)
    row = learning_tables.skills_table(found).splitlines()[2]
    assert row.split("|")[7].strip() == "7", row


def test_the_skill_table_says_how_often_each_episode_was_evaluated(tmp_path):
    data = _skill_json("rearrange/ver_close_cab", "2026-01-02T10:00:00", 5, {}, {})
    for evaluation in (data["trained"], data["untrained"]):
        evaluation.update(episodes=10, evals_per_episode=5)
    (tmp_path / "hab_skill_learning_close_cab_0.json").write_text(json.dumps(data))
    found = records.load_all(tmp_path, raw=convert.raw_record)
    assert found[0]["settings"]["evals_per_episode"] == 5
    row = learning_tables.skills_table(found).splitlines()[2]
    assert row.split("|")[7].strip() == "10 x 5", row


def test_a_run_started_from_another_runs_weights_shows_the_steps_of_both(tmp_path):
    first = _skill_json("rearrange/ver_close_cab", "2026-01-01T10:00:00", 800_000, {}, {})
    second = _skill_json("rearrange/ver_close_cab", "2026-01-02T10:00:00", 300_000, {}, {})
    second["init_from"] = {"checkpoint": "/r/ckpt/ckpt.9.pth", "step": 808_960, "config": "x"}
    for i, data in enumerate((second, first)):
        (tmp_path / f"hab_skill_learning_close_cab_{i}.json").write_text(json.dumps(data))
    found = records.load_all(tmp_path, raw=convert.raw_record)
    rows = learning_tables.skills_table(found).splitlines()[2:]
    # sorted by all the steps behind the weights: 800,000 < 808,960 + 300,000
    assert [row.split("|")[2].strip() for row in rows] == ["800,000", "808,960 + 300,000"]


def test_the_skill_detail_names_the_stage_a_skill_reaches(tmp_path):
    untrained = {"art_obj_success": 0.0, "art_obj_at_desired_state": 0.0}
    trained = {"art_obj_success": 0.0, "art_obj_at_desired_state": 0.2, "ee_to_rest_distance": 0.3}
    untrained["ee_to_rest_distance"] = 0.25
    data = _skill_json("rearrange/ver_close_cab", "2026-01-02T10:00:00", 5, untrained, trained)
    (tmp_path / "hab_skill_learning_close_cab_0.json").write_text(json.dumps(data))
    found = records.load_all(tmp_path, raw=convert.raw_record)
    header, _, row = learning_tables.skill_detail_table(found).splitlines()
    cells = dict(zip(header.split("|"), row.split("|")))
    assert cells[" at the target state "] == " 0.00 -> 0.20 "
    assert cells[" end effector to rest (m) "] == " 0.25 -> 0.30 "
    assert cells[" grasped "] == "  "  # a pick figure: not measured here


def test_the_skill_curves_are_each_configs_newest_with_curves(tmp_path):
    curves = {"success_metric": "art_obj_success", "success": [[0, 0.0], [10, 0.5]], "return": []}
    runs = [
        ("rearrange/ver_close_cab", "2026-01-01T10:00:00", curves),
        ("rearrange/ver_close_cab", "2026-01-02T10:00:00", dict(curves, success=[[0, 0.1]])),
        ("rearrange/ver_close_cab", "2026-01-03T10:00:00", None),  # an older script's
        ("rearrange/ver_open_cab", "2026-01-01T10:00:00", curves),
    ]
    for i, (config, date, run_curves) in enumerate(runs):
        data = _skill_json(config, date, 10, {}, {})
        if run_curves is not None:
            data["curves"] = run_curves
        (tmp_path / f"hab_skill_learning_{i}.json").write_text(json.dumps(data))
    found = records.load_all(tmp_path, raw=convert.raw_record)
    chosen = plots._newest_curves(found)
    assert [(r["settings"]["config"], r["start"][:10]) for r in chosen] == [
        ("rearrange/ver_close_cab", "2026-01-02"),
        ("rearrange/ver_open_cab", "2026-01-01"),
    ]
    assert chosen[0]["metrics"]["curves"]["success"] == [[0, 0.1]]
    assert plots.skill_curves_png(found, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    assert not plots.skill_curves_png([], tmp_path / "none.png")


def test_render_doc_replaces_only_between_markers_and_refuses_unknown_blocks():
    blocks = {"x": lambda found: f"| {len(found)} records |\n"}
    text = "before\n<!-- report:x -->\nstale\n<!-- /report:x -->\nafter\n"
    assert report.render_doc(text, [1, 2], blocks) == (
        "before\n<!-- report:x -->\n| 2 records |\n<!-- /report:x -->\nafter\n"
    )
    with pytest.raises(KeyError, match="no report block named 'y'"):
        report.render_doc("<!-- report:y -->\n<!-- /report:y -->", [], blocks)


def test_trainer_sps_json_becomes_one_record_per_workload():
    raw = {
        "git_sha": "f00",
        "machine": "Linux",
        "cpus": 2,
        "settings": {"steps": 4096},
        "load_before": [0.5, 0.4, 0.3],
        "load_after": [1.5, 1.0, 0.5],
        "started": "2026-01-01 10:00:00",
        "workloads": {
            "homogeneous": {
                "workload": {"config": "doom/x", "envs": 16, "num_steps": 128},
                "results": {
                    "ver": {
                        "steady_sps": 300.0,
                        "collect_s": 1.0,
                        "learn_s": 3.0,
                        "cpu": {"ms_per_step": {"trainer": 4.0}, "cores_used": 1.9},
                        "memory": {"trainer": {"uss_mb": 600.0, "pss_mb": 700.0}},
                    },
                    "appo": {"error": "failed"},
                },
            }
        },
    }
    (record,) = convert.from_trainer_sps(raw)
    assert record["workload"] == "doom_a" and record["quiet"] is True  # load 0.5 < 2 / 2
    assert record["settings"] == {"config": "doom/x", "envs": 16, "num_steps": 128, "steps": 4096}
    assert record["systems"]["ver"] == {
        "steps_per_s": 300.0,
        "collect_s": 1.0,
        "learn_s": 3.0,
        "cpu_ms_per_step": {"trainer": 4.0},
        "cores_used": 1.9,
        "idle_share": None,
        "lost_workers": {},
        "memory_uss_mb": {"trainer": 600.0},
    }
    assert record["systems"]["appo"] == {"error": "failed"}


def test_run_calls_the_workloads_script_and_writes_its_record(tmp_path, monkeypatch):
    calls = []

    def main():
        calls.append(list(sys.argv))
        out = Path(sys.argv[sys.argv.index("--out") + 1])
        out.write_text(json.dumps({"rate": 12.5}))

    monkeypatch.setitem(sys.modules, "fake_script", types.SimpleNamespace(main=main))

    def to_records(raw):
        return [records.make("fake", {"envs": 2}, {"ver": {"steps_per_s": raw["rate"]}})]

    fake = workloads.Workload("a fake", "fake_script", workloads._plain("--x", "1"), to_records)
    monkeypatch.setitem(workloads.WORKLOADS, "fake", fake)
    monkeypatch.setattr(records, "idle_share", lambda: 0.95)  # the machine 95% idle before
    (path,) = workloads.run("fake", None, ["--y"], results=tmp_path)
    assert calls[0][0] == "benchmarks/fake_script.py"
    assert calls[0][1:3] == ["--x", "1"] and calls[0][-1] == "--y"
    record = json.loads(path.read_text())
    assert record["systems"] == {"ver": {"steps_per_s": 12.5}}
    assert record["settings"]["command"] == "python -m benchmarks run fake -- --y"
    assert record["commit"] and record["start"] and record["end"]
    assert len(record["load"]["before"]) == 3 and record["machine"]["cpus"]
    assert record["load"]["idle_before"] == 0.95 and record["quiet"] is True
    assert path.name == records.file_name(record)


def test_a_blind_pointnav_run_becomes_its_table_row():
    run = {
        "steady_sps": 436.4,
        "steps_to_threshold": 12800.0,
        "final_success": 0.92,
        "final_spl": 0.791,
        "eval": {"success": 0.95, "spl": 0.88, "wall_s": 12.0},
        "cpu": {"ms_per_step": {"trainer": 1.0}, "machine_idle_share": 0.5},
    }
    raw = {
        "git_sha": "ca66f82",
        "cpus": 2,
        "task": "pointnav_blind",
        "threshold": 0.8,
        "load_before": [3.84, 2.58, 2.17],
        "started": "2026-11-27 04:37:00",
        "systems": {"ddppo": {"config": "pointnav/ddppo_simple_room", "seeds": {"1": run}}},
    }
    record = convert.from_sample_efficiency(raw)
    assert record["workload"] == "pointnav_blind" and record["quiet"] is False  # 3.84 >= 1
    # 12800 steps -> 12.8k; SPL 0.791 -> 0.79; 436.4 steps/s -> 436
    assert learning_tables.pointnav_blind_table([record]).splitlines()[2] == (
        "| `ddppo` | 12.8k / 0.92, 0.79 / 0.95, 0.88 / 436 |"
    )


def test_hab_stage_logs_become_a_record_and_the_reports_table(tmp_path):
    log = tmp_path / "eval.log"
    log.write_text(
        "2026-01-01 10:00:00 habitat_ver: evaluating ckpt.pth on 4 episode(s)\n"
        "Average episode pddl_stage_goals.stage_0_5_success: 0.7500\n"
        "Average episode pddl_stage_goals.stage_1_success: 0.5000\n"
        "Average episode pddl_success: 0.2500\n"
    )
    argv = ["--kind", "oracle", "--run", f"hab/set_table_oracle={log}"]
    (path,) = workloads.run("hab_stages", None, argv, results=tmp_path)
    found = records.load_all(tmp_path)
    # 0.75 -> 75.0 %, 0.5 -> 50.0 %, the full task 0.25 -> 25.0 %; no paper figure
    assert learning_tables.stages_table(found, "oracle").splitlines()[2] == (
        "| set_table | oracle skills | 4 | 75.0 | 50.0 | 25.0 | - |"
    )
    assert path.name.startswith("hab_stages_")


def test_quiet_is_an_idle_machine_before_the_run_else_a_low_load():
    # idle share measured: 0.9 is quiet, 0.89 is not, whatever the load says
    assert records.is_quiet([5.0, 5.0, 5.0], 2, idle_before=0.9) is True
    assert records.is_quiet([0.1, 0.1, 0.1], 2, idle_before=0.89) is False
    # not measured (older results): 1-minute load under half of 2 cores
    assert records.is_quiet([0.99, 3.0, 3.0], 2) is True
    assert records.is_quiet([1.0, 0.1, 0.1], 2) is False
