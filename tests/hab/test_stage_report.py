"""The per-stage report reproduces a hand-made table from hand-written logs,
in the paper's stage numbering, with episode counts, and says what it wrote."""

import pytest
from omegaconf import OmegaConf

from habitat_ver.tools.hab_stage_report import (
    main,
    parse_eval_log,
    read_evaluations,
    split_run_name,
    stage_name,
)
from habitat_ver.trainers.eval_header import (
    HEADER,
    counted_line,
    envs_for_episodes,
    evaluated_checkpoint,
    header_line,
    planned_episodes,
)

# One evaluation, opened by our trainers' header line; an earlier run's
# training lines before it are not an evaluation.
TIDY_LOG = f"""\
2024-01-01 00:00:00,000 update: 10\tsteps: 1280
2024-01-02 00:00:00,000 {header_line("outputs/hab/tidy_house/checkpoints", 10)}
2024-01-02 00:00:00,000 Average episode reward: 12.5000
2024-01-02 00:00:00,000 Average episode pddl_stage_goals.stage_0_5_success: 0.8000
2024-01-02 00:00:00,000 Average episode pddl_stage_goals.stage_1_success: 0.6000
2024-01-02 00:00:00,000 Average episode pddl_stage_goals.stage_1_5_success: 0.5000
2024-01-02 00:00:00,000 Average episode pddl_stage_goals.stage_2_success: 0.4000
2024-01-02 00:00:00,000 Average episode pddl_success: 0.2500
"""
# A log written before the header line existed: no episode count.
NONAV_LOG = """\
Average episode pddl_stage_goals.stage_0_5_success: 0.4750
Average episode pddl_stage_goals.stage_1_success: 0.1000
Average episode pddl_success: 0.0000
"""
# Hand-made: stage s of habitat-lab's stage_goals as docs/HAB.md numbers them
# (0.5 = holding object 1, 1 = object 1 placed), percent with one decimal,
# "-" where a run has no such stage or the log does not say, the paper's
# Tidy House numbers (50% NavPick = stage 0.5, 20% NavPickNavPlace = stage 1).
EXPECTED = """\
| scenario | method | episodes | 0.5 | 1 | 1.5 | 2 | full task | paper |
|---|---|---|---|---|---|---|---|---|
| tidy_house | TP-SRL | 10 | 80.0 | 60.0 | 50.0 | 40.0 | 25.0 | full: 32.0 |
| tidy_house | TP-SRL(NoNav) | - | 47.5 | 10.0 | - | - | 0.0 | 0.5: 50.0, 1: 20.0 |
"""


def test_report_matches_the_hand_made_table_and_names_its_files(tmp_path, capsys):
    (tmp_path / "a.log").write_text(TIDY_LOG)
    (tmp_path / "b.log").write_text(NONAV_LOG)
    out = tmp_path / "report"
    code = main(
        [
            "--run",
            f"hab/tidy_house={tmp_path / 'a.log'}",
            "--run",
            f"hab/tidy_house_nonav={tmp_path / 'b.log'}",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert (out / "stage_success.md").read_text() == EXPECTED
    printed = capsys.readouterr().out
    assert printed == EXPECTED + f"wrote {out}/stage_success.md and {out}/stage_success.png\n"
    png = (out / "stage_success.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000


def test_stage_names_follow_the_paper():
    assert [stage_name(s) for s in (0.5, 1.0, 1.5, 4.5, "full")] == [
        "0.5",
        "1",
        "1.5",
        "4.5",
        "full",
    ]


def test_a_log_with_several_evaluations_is_refused_in_one_line(tmp_path, capsys):
    # The same evaluation run twice into one eval.log (the file handler appends).
    (tmp_path / "eval.log").write_text(TIDY_LOG + TIDY_LOG.split("\n", 1)[1])
    code = main(["--run", f"hab/tidy_house={tmp_path / 'eval.log'}", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0] == (
        "python -m habitat_ver.tools.hab_stage_report: error: "
        f"'{tmp_path / 'eval.log'}' holds 2 evaluations (line 2 (2024-01-02 00:00:00), "
        "line 9 (2024-01-02 00:00:00)); the report shows one per log: move the log aside "
        "before evaluating again, or give each evaluation its own habitat_baselines.log_file"
    )
    assert not (tmp_path / "stage_success.md").exists()


def test_evaluations_without_header_lines_are_told_apart_by_repeated_keys(tmp_path):
    # Upstream's own evaluator: two checkpoints, Average lines only.
    (tmp_path / "eval.log").write_text(NONAV_LOG + NONAV_LOG)
    found = read_evaluations(str(tmp_path / "eval.log"))
    assert [e.line for e in found] == [1, 4] and [e.episodes for e in found] == [None, None]
    with pytest.raises(ValueError, match="holds 2 evaluations"):
        parse_eval_log(str(tmp_path / "eval.log"))


def test_an_evaluation_that_ended_without_results_is_not_counted(tmp_path):
    crashed = "2024-01-01 00:00:00,000 " + header_line("x.pth", 10) + "\n"
    (tmp_path / "eval.log").write_text(crashed + TIDY_LOG)
    evaluation = parse_eval_log(str(tmp_path / "eval.log"))
    assert evaluation.episodes == 10 and evaluation.metrics["pddl_success"] == 0.25


def test_the_count_after_the_averages_is_the_one_reported(tmp_path):
    # 10 planned; several envs ended their episodes on the last step: 12 averaged.
    counted = "2024-01-01 00:00:09,000 " + counted_line(12) + "\n"
    (tmp_path / "eval.log").write_text(TIDY_LOG + counted)
    assert parse_eval_log(str(tmp_path / "eval.log")).episodes == 12


@pytest.mark.parametrize(
    "count, envs, expected", [(1, 4, 1), (3, 4, 3), (4, 4, 4), (9, 4, 4), (-1, 4, 4)]
)
def test_an_evaluation_runs_on_no_more_envs_than_its_episodes(count, envs, expected):
    config = OmegaConf.create(
        {"habitat_baselines": {"test_episode_count": count, "num_environments": envs}}
    )
    OmegaConf.set_readonly(config, True)
    assert envs_for_episodes(config).habitat_baselines.num_environments == expected
    assert config.habitat_baselines.num_environments == envs  # the caller's is untouched


def test_bad_inputs_are_named(tmp_path):
    with pytest.raises(
        ValueError,
        match=r"run name 'hab/kitchen' is not a HAB evaluation; allowed: \['hab/tidy_house'",
    ):
        split_run_name("hab/kitchen")
    (tmp_path / "empty.log").write_text("nothing\n")
    with pytest.raises(ValueError, match="holds no 'Average episode pddl_success' line"):
        parse_eval_log(str(tmp_path / "empty.log"))
    assert split_run_name("hab/set_table_nonav") == ("set_table", "TP-SRL(NoNav)")


def test_a_missing_log_is_one_line_with_exit_2(tmp_path, capsys):
    missing = tmp_path / "outputs" / "hab" / "tidy_house" / "eval.log"
    code = main(["--run", f"hab/tidy_house={missing}", "--out", str(tmp_path / "report")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0] == (
        "python -m habitat_ver.tools.hab_stage_report: error: no evaluation log at "
        f"'{missing}'; run the evaluation first (python -m habitat_baselines.run "
        "--config-name=hab/<scenario>), which writes its habitat_baselines.log_file there"
    )
    assert not (tmp_path / "report").exists()


def test_oracle_runs_are_a_method_of_their_own():
    assert split_run_name("hab/set_table_oracle") == ("set_table", "oracle skills")


def test_the_learned_pick_among_oracle_skills_is_a_method_of_tidy_house_only():
    assert split_run_name("hab/tidy_house_learned_pick") == ("tidy_house", "oracle, learned pick")
    assert split_run_name("hab/set_table_learned_open") == ("set_table", "oracle, learned open")
    with pytest.raises(ValueError, match="'hab/set_table_learned_pick' is not a HAB evaluation"):
        split_run_name("hab/set_table_learned_pick")  # no such config


class _Config:
    """The two keys planned_episodes reads."""

    def __init__(self, count, evals_per_ep=1):
        eval_section = type("Eval", (), {"evals_per_ep": evals_per_ep})
        self.habitat_baselines = type(
            "Baselines", (), {"test_episode_count": count, "eval": eval_section}
        )


@pytest.mark.parametrize(
    "count, per_env, evals, expected",
    [
        (-1, [10], 1, 10),  # every episode of the split
        (2, [10], 1, 2),
        (20, [6, 4], 1, 10),  # more asked than the data has: upstream evaluates all
        (3, [-1, -1], 1, 3),  # unknown (an embedded env): the count asked
        (-1, [5], 2, 10),  # each episode evaluated twice
    ],
)
def test_the_episode_count_follows_upstreams_rule(count, per_env, evals, expected):
    assert planned_episodes(_Config(count, evals), per_env) == expected


def test_an_evaluation_without_a_checkpoint_says_so_in_its_header():
    # hab/* evaluations load their skills' checkpoints, none of their own: the
    # line read "evaluating  on 4 episode(s)".
    line = header_line("", 4)
    assert line == "habitat_ver: evaluating the config's policy (no checkpoint) on 4 episode(s)"
    match = HEADER.search(line)
    assert match and match["episodes"] == "4"


def test_an_untrained_evaluation_does_not_name_the_checkpoint_it_does_not_load():
    config = OmegaConf.create(
        {"habitat_baselines": {"eval_ckpt_path_dir": "run/ckpt.3.pth", "eval": {}}}
    )
    config.habitat_baselines.eval.should_load_ckpt = False
    assert evaluated_checkpoint(config, "run/ckpt.3.pth") == ""
    config.habitat_baselines.eval.should_load_ckpt = True
    assert evaluated_checkpoint(config, None) == "run/ckpt.3.pth"
    assert evaluated_checkpoint(config, "run/ckpt.5.pth") == "run/ckpt.5.pth"
