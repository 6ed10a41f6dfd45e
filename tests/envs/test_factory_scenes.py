"""How the env factory deals scenes to environments, and the line that says so."""

from habitat_ver.envs.factory import split_scenes, splits_line


def test_every_scene_is_dealt_once_round_robin():
    splits = split_scenes([f"s{i}" for i in range(10)], 4, seed=3)
    assert [len(s) for s in splits] == [3, 3, 2, 2]  # 10 = 3 + 3 + 2 + 2
    assert sorted(sum(splits, [])) == sorted(f"s{i}" for i in range(10))
    # Fewer scenes than envs: every env runs all of them.
    assert split_scenes(["a", "b"], 3, seed=0) in ([["a", "b"]] * 3, [["b", "a"]] * 3)


def test_a_short_split_list_is_logged_whole():
    assert (
        splits_line([["a", "b"], ["c"]])
        == "habitat_ver: scenes per environment: [['a', 'b'], ['c']]"
    )


def test_a_long_split_list_is_one_line_within_300_characters_with_its_timestamp():
    scenes = [f"data/hab_ver/scenes/apartment_{i:03d}.scene_instance.json" for i in range(120)]
    splits = split_scenes(scenes, 4, seed=1)
    line = splits_line(splits)
    assert len(str(splits)) > 3000 and len(line) <= 300 - 24
    assert line.startswith("habitat_ver: 120 scenes over 4 environments, 30 to 30 each; ")
    shown = line.split("environment 0 runs ")[1].split(", ... (")[0].split(", ")
    assert shown == splits[0][: len(shown)] and len(shown) >= 1
    assert line.endswith(f", ... ({30 - len(shown)} more)")
    # A limit too small for any name still says how many there are.
    assert splits_line(splits, max_chars=80).endswith("; environment 0 runs 30 of them")
