"""The per-stage report reproduces a hand-made table from hand-written logs."""

import pytest

from habitat_ver.tools.hab_stage_report import main, parse_eval_log, split_run_name

# Two evaluation checkpoints in one log: the report keeps the last block.
TIDY_LOG = """\
2024-01-01 00:00:00,000 Average episode reward: 1.0000
2024-01-01 00:00:00,000 Average episode pddl_success: 0.9000
2024-01-02 00:00:00,000 Average episode reward: 12.5000
2024-01-02 00:00:00,000 Average episode pddl_stage_goals.stage_0_5_success: 0.8000
2024-01-02 00:00:00,000 Average episode pddl_stage_goals.stage_1_success: 0.6000
2024-01-02 00:00:00,000 Average episode pddl_stage_goals.stage_1_5_success: 0.5000
2024-01-02 00:00:00,000 Average episode pddl_stage_goals.stage_2_success: 0.4000
2024-01-02 00:00:00,000 Average episode pddl_success: 0.2500
"""
NONAV_LOG = """\
Average episode pddl_stage_goals.stage_0_5_success: 0.4750
Average episode pddl_stage_goals.stage_1_success: 0.1000
Average episode pddl_success: 0.0000
"""
# Hand-made: interaction 2*s for stage s, percent with one decimal, "-" where
# a run has no such stage, the paper's Tidy House numbers in the last column.
EXPECTED = """\
| scenario | method | 1 | 2 | 3 | 4 | full task | paper |
|---|---|---|---|---|---|---|---|
| tidy_house | TP-SRL | 80.0 | 60.0 | 50.0 | 40.0 | 25.0 | full: 32.0 |
| tidy_house | TP-SRL(NoNav) | 47.5 | 10.0 | - | - | 0.0 | 1: 50.0, 2: 20.0 |
"""


def test_report_matches_the_hand_made_table(tmp_path, capsys):
    (tmp_path / "a.log").write_text(TIDY_LOG)
    (tmp_path / "b.log").write_text(NONAV_LOG)
    out = tmp_path / "report"
    main(
        [
            "--run",
            f"hab/tidy_house={tmp_path / 'a.log'}",
            "--run",
            f"hab/tidy_house_nonav={tmp_path / 'b.log'}",
            "--out",
            str(out),
        ]
    )
    assert (out / "stage_success.md").read_text() == EXPECTED
    assert capsys.readouterr().out == EXPECTED
    png = (out / "stage_success.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000


def test_last_value_of_a_key_wins(tmp_path):
    (tmp_path / "a.log").write_text(TIDY_LOG)
    assert parse_eval_log(str(tmp_path / "a.log"))["pddl_success"] == 0.25


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
