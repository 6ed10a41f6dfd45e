"""Every skill checkpoint of a hab/* config is checked before any env starts.

habitat_ver.skills.checkpoint_check, on configs composed as the command line
does and on the session's skill checkpoints (tests/hab/conftest.py): each
problem named by the ``hab_skill_checkpoints.<skill>`` key and path, all of
them in one line.
"""

import os
import re

import pytest

from habitat_ver.config import shipped_skills
from habitat_ver.config.compose import get_config
from habitat_ver.config.errors import ConfigError
from habitat_ver.skills.checkpoint_check import check_skill_checkpoints
from habitat_ver.skills.loading import SkillCheckpointError

from .conftest import hab_overrides


def _check(name, paths, extra=()):
    check_skill_checkpoints(get_config(name, hab_overrides(paths) + list(extra)))


def test_good_checkpoints_and_oracle_skills_pass(skill_checkpoints):
    _check("hab/tidy_house", skill_checkpoints)
    # The oracle configs load no checkpoint at all.
    check_skill_checkpoints(get_config("hab/tidy_house_oracle"))


def test_every_missing_checkpoint_is_named_in_one_line_by_its_key(tmp_path):
    paths = {k: tmp_path / f"no_{k}.pth" for k in ("pick", "place", "nav_to_obj")}
    with pytest.raises(SkillCheckpointError) as raised:
        _check("hab/tidy_house", paths)
    message = str(raised.value)
    assert isinstance(raised.value, ConfigError) and "\n" not in message
    assert message.startswith("3 skill checkpoints cannot be used: "), message
    for key, path in paths.items():
        assert f"hab_skill_checkpoints.{key}='{path}': no such file" in message
    assert "defined_skills" not in message


def test_the_defaults_of_a_scenario_are_all_reported(tmp_path, monkeypatch):
    # From an empty folder: every skill set_table loads, none trained yet.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SkillCheckpointError) as raised:
        check_skill_checkpoints(get_config("hab/set_table", ["hab_profile=paper"]))
    message = str(raised.value)
    for key in ("pick", "place", "nav_to_obj", "open_cab", "open_fridge"):
        assert (
            f"hab_skill_checkpoints.{key}='outputs/rearrange/ver_{key}/checkpoints/latest.pth': "
            "no such file" in message
        ), message
    assert "close_cab" not in message  # ignored by set_table: not loaded


def test_the_cpu_profile_reads_the_shipped_checkpoints(tmp_path, monkeypatch):
    # Anywhere, the CPU profile's defaults are the files shipped with the
    # package, and the user's own runs for the skills none is shipped of.
    monkeypatch.chdir(tmp_path)
    config = get_config("hab/set_table_nonav", ["hab_profile=cpu"])
    for key in ("pick", "place", "open_cab", "open_fridge", "close_cab", "close_fridge"):
        shipped = os.path.join(shipped_skills.SHIPPED_DIR, f"{key}.pth")
        own = f"outputs/rearrange/ver_{key}/checkpoints/latest.pth"
        expected = shipped if key in shipped_skills.provenance() else own
        assert config.hab_skill_checkpoints[key] == expected


def test_a_checkpoint_of_another_skill_is_named_as_such(skill_checkpoints):
    paths = dict(skill_checkpoints, place=skill_checkpoints["pick"])
    pick = skill_checkpoints["pick"]
    with pytest.raises(
        SkillCheckpointError,
        match=(
            rf"^hab_skill_checkpoints\.place='{re.escape(str(pick))}': the file at "
            rf"{re.escape(str(pick))} is a checkpoint of skill `pick`, not `place` "
            r"\(habitat\.task\.type=RearrangePickTask-v0; `place` is trained on "
            r"RearrangePlaceTask-v0\); train each skill with its rearrange/ver_<skill> config"
        ),
    ):
        _check("hab/tidy_house", paths)


def test_a_text_file_and_a_truncated_checkpoint_are_named_by_their_keys(
    skill_checkpoints, tmp_path
):
    text = tmp_path / "pick.txt"
    text.write_text("not a checkpoint\n")
    truncated = tmp_path / "nav.pth"
    truncated.write_bytes(skill_checkpoints["nav_to_obj"].read_bytes()[:1000])
    paths = dict(skill_checkpoints, pick=text, nav_to_obj=truncated)
    with pytest.raises(SkillCheckpointError) as raised:
        _check("hab/tidy_house", paths)
    message = str(raised.value)
    assert message.startswith("2 skill checkpoints cannot be used: ")
    assert f"hab_skill_checkpoints.pick='{text}': not a readable checkpoint (" in message
    assert f"hab_skill_checkpoints.nav_to_obj='{truncated}': not a readable checkpoint (" in (
        message
    )
    assert "place" not in message.split("; train")[0]


def test_a_path_set_on_the_skill_itself_is_named_by_that_key(skill_checkpoints, tmp_path):
    key = "habitat_baselines.rl.policy.main_agent.hierarchical_policy.defined_skills.pick"
    with pytest.raises(
        SkillCheckpointError, match=rf"^{re.escape(key)}\.load_ckpt_file='{tmp_path}/x.pth'"
    ):
        _check("hab/tidy_house", skill_checkpoints, [f"{key}.load_ckpt_file={tmp_path}/x.pth"])
