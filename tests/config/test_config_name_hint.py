"""A misspelled --config-name: one line with the nearest names of our tree."""

import pytest
from hydra._internal.config_search_path_impl import ConfigSearchPathImpl

from habitat_ver.config import config_name_hint
from habitat_ver.config.config_name_hint import (
    hint_unknown_config,
    nearest_config_names,
    requested_config_name,
    unknown_config_line,
)
from habitat_ver.config.search_path import add_config_tree

NAMES = ["rearrange/ver_pick", "rearrange/ver_place", "rearrange/ddppo_pick", "gym/ver_cartpole"]


def test_the_nearest_names_come_best_first():
    # difflib's ratio 2*matched/(both lengths) against "rearrange/ver_pik"
    # (17 chars): ver_pick 2*17/35 = 0.97, ver_place 2*15/36 = 0.83,
    # ddppo_pick 2*14/37 = 0.76; gym/ver_cartpole 2*7/33 = 0.42 < 0.6.
    assert nearest_config_names("rearrange/ver_pik", NAMES) == NAMES[:3]
    assert nearest_config_names("rearrange/ver_pik.yaml", NAMES, limit=1) == NAMES[:1]
    assert nearest_config_names("zzz/qqq", NAMES) == []


def test_the_line_names_the_config_and_the_nearest_or_our_folders():
    assert unknown_config_line("rearrange/ver_pik") == (
        "--config-name=rearrange/ver_pik: no such config; did you mean "
        "rearrange/ver_pick, rearrange/ver_place, rearrange/ver_pick_nonav?"
    )
    line = unknown_config_line("zzz/qqq")
    assert line.startswith("--config-name=zzz/qqq: no such config; habitat-ver's are in ")
    assert "gym/, hab/, pointnav/, rearrange/" in line


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--config-name=a/b", "x=1"], "a/b"),
        (["--config-name", "a/b"], "a/b"),
        (["-cn", "a/b"], "a/b"),
        (["-cn=a/b"], "a/b"),
        (["x=1"], None),
        (["--config-name"], None),
    ],
)
def test_the_config_name_is_read_from_the_command_line(argv, expected):
    assert requested_config_name(argv) == expected


def test_the_plugin_hints_only_for_a_near_miss_found_nowhere(capsys, monkeypatch):
    monkeypatch.setattr(config_name_hint, "_hinted", False)
    search_path = ConfigSearchPathImpl()
    add_config_tree(search_path)
    hint_unknown_config(search_path, ["--config-name=rearrange/ver_pick"])  # exists
    hint_unknown_config(search_path, ["--config-name=zzz/qqq"])  # near nothing of ours
    assert capsys.readouterr().err == ""
    hint_unknown_config(search_path, ["--config-name=rearrange/ver_pik"])
    hint_unknown_config(search_path, ["--config-name=rearrange/ver_pik"])  # once a run
    assert capsys.readouterr().err == (
        "habitat_ver: --config-name=rearrange/ver_pik: no such config; did you mean "
        "rearrange/ver_pick, rearrange/ver_place, rearrange/ver_pick_nonav?\n"
    )
