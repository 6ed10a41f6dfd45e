"""The ranks-against-envs benchmark's arithmetic: its step budget and commands,
the rank processes charged as the trainer, and its record and table from a
hand-made report (nothing is run)."""

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
convert = importlib.import_module("convert")
process_cpu = importlib.import_module("process_cpu")
ranks_vs_envs = importlib.import_module("ranks_vs_envs")
run_logs = importlib.import_module("run_logs")
report = importlib.import_module("report")
tables = importlib.import_module("tables")
workloads = importlib.import_module("workloads")

AGENT, RANK_0, RANK_1, ENV = 100, 101, 102, 103


def _run(sps, ranks, envs_per_rank, wall, ms_per_step, cores):
    cpu = dict(
        ms_per_step=ms_per_step,
        processes={k: 1 for k in ms_per_step},
        cores_used=cores,
        machine_idle_share=0.0,
        workers_exited={},
    )
    return dict(
        steady_sps=sps,
        ranks=ranks,
        envs_per_rank=envs_per_rank,
        wall_s=wall,
        steps=1024,
        learner_threads=1.0,
        cpu=cpu,
    )


RAW = dict(
    benchmark="ranks_vs_envs",
    git_sha="abcdef0123",
    machine="Linux",
    cpus=2,
    settings=dict(updates=4, envs=4, layouts=["1x4", "2x2"]),
    load_before=[8.0, 6.0, 5.0],
    load_after=[9.5, 7.0, 5.5],
    started="2026-01-02 10:00:00",
    finished="2026-01-02 10:20:00",
    tasks={"pointnav": dict(config="pointnav/ver_simple_room", num_steps=64, steps=1024)},
    runs={
        "pointnav/1x4": _run(
            40.0, 1, 4, 100.4, {"trainer": 20.0, "env_workers": 10.0, "forkserver": 0.5}, 1.22
        ),
        "pointnav/2x2": _run(
            32.0,
            2,
            2,
            150.6,
            {"trainer": 30.0, "env_workers": 11.0, "forkserver": 0.5, "other": 1.5},
            1.38,
        ),
        "pick/1x4": {"error": ["a failed run"], "wall_s": 5.0},
    },
)


def test_every_layout_runs_four_envs_and_the_same_budget_of_updates():
    pointnav, pick = ranks_vs_envs.TASKS["pointnav"], ranks_vs_envs.TASKS["pick"]
    assert {r * n for r, n in ranks_vs_envs.LAYOUTS.values()} == {ranks_vs_envs.ENVS}
    # 4 updates of 4 envs x T: 4 * 4 * 64 and 4 * 4 * 128 env steps.
    assert ranks_vs_envs.budget(pointnav, 4) == 1024
    assert ranks_vs_envs.budget(pick, 4) == 2048
    two = ranks_vs_envs.command(pick, 2, 2, 2048, Path("/tmp/run"))
    assert two[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    assert "habitat_baselines.num_environments=2" in two
    assert "habitat_baselines.total_num_steps=2048" in two
    assert {"hab_data=generated", "hab_profile=cpu"} <= set(two)
    one = ranks_vs_envs.command(pointnav, 1, 4, 1024, Path("/tmp/run"))
    assert one[1:3] == ["-m", "habitat_baselines.run"]
    assert "habitat_baselines.num_environments=4" in one


def test_the_steady_window_leaves_out_the_last_update_where_it_can():
    points = [(256.0 * (i + 1), 30.0, 100.0 + 8.0 * i) for i in range(4)]
    series = {"sps": ("system/sps", points), "reward": ("reward", points)}
    trimmed = ranks_vs_envs.without_last_update(series)
    assert trimmed["sps"] == ("system/sps", points[:3]) and trimmed["reward"] == series["reward"]
    # Steady window: the second logged update to the third, 256 steps in 8 s.
    assert run_logs.summarize(trimmed)["steady_window"] == [108.0, 116.0, 256.0]
    # With two logged updates there is nothing to leave out.
    assert ranks_vs_envs.without_last_update({"sps": ("s", points[:2])})["sps"][1] == points[:2]


def test_a_torchrun_runs_ranks_are_its_trainer_and_its_agent_is_other():
    # The sampler's root is torchrun's agent: its ranks (unnamed children)
    # read as other.  Over the window each rank spends 1.0 s, the env worker
    # 0.5 s and the agent 0.1 s, for 100 env steps.
    def snapshot(wall, rank_s, env_s, agent_s):
        cpu = {
            ("trainer", AGENT): agent_s,
            ("other", RANK_0): rank_s,
            ("other", RANK_1): rank_s,
            ("env_workers", ENV): env_s,
        }
        return process_cpu.Snapshot(wall, cpu, 0.0, 1.0)

    snapshots = [snapshot(10.0, 2.0, 1.0, 0.2), snapshot(20.0, 3.0, 1.5, 0.3)]
    relabelled = ranks_vs_envs.as_ranks(snapshots, AGENT, {RANK_0, RANK_1})
    cpu = process_cpu.window_costs(relabelled, 10.0, 20.0, 100.0)
    # trainer: 2 x 1.0 s / 100 steps = 20 ms; env workers 0.5 s = 5 ms; agent 0.1 s = 1 ms.
    expected = {"trainer": 20.0, "env_workers": 5.0, "other": 1.0}
    assert cpu["ms_per_step"] == pytest.approx(expected)
    assert cpu["processes"] == {"trainer": 2, "env_workers": 1, "other": 1}


def test_the_record_and_table_of_a_hand_made_report():
    [record] = workloads.WORKLOADS["ranks_vs_envs"].convert(RAW)
    assert record["workload"] == "ranks_vs_envs" and record["settings"]["updates"] == 4
    assert record["systems"]["pick/1x4"] == {"error": ["a failed run"], "wall_s": 5.0}
    assert record["systems"]["pointnav/2x2"]["cpu_ms_per_step"]["other"] == 1.5
    assert record["quiet"] is False  # 1-minute load 8.0 on 2 cores

    text = tables.ranks_table([record])
    # 2 x 2: 32 / 40 = 0.80 of one rank's steps/s; other 0.5 + 1.5 ms; all
    # 30 + 11 + 2 = 43 ms (1 x 4: 20 + 10 + 0.5 = 30.5).  The failed pick run
    # has no row.
    run = "8.0 / 9.5 | 2026-01-02 10:00, abcdef0, loaded |"
    assert text.splitlines()[2:] == [
        "| PointNav | 1 x 4 | 40.0 | 1.00 | 20.00 | 10.00 | 0.50 | 30.50 | 1.22 | 100 | " + run,
        "| PointNav | 2 x 2 | 32.0 | 0.80 | 30.00 | 11.00 | 2.00 | 43.00 | 1.38 | 151 | " + run,
    ]
    doc = "a\n<!-- report:ranks_vs_envs -->\nold\n<!-- /report:ranks_vs_envs -->\nb\n"
    assert report.render_doc(doc, [record]) == (
        f"a\n<!-- report:ranks_vs_envs -->\n{text}<!-- /report:ranks_vs_envs -->\nb\n"
    )


def test_without_a_record_the_table_says_so():
    assert tables.ranks_table([]) == "No record of this workload yet.\n"
