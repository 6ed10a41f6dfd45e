"""Rearrangement configs without their data: one line naming the folders and the
``datasets_download`` command, exit 2, on both command lines and in both modes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from habitat_ver.config.compose import config_names, get_config
from habitat_ver.config.errors import ConfigError
from habitat_ver.config.hab_data import (
    DATA_SOURCES,
    HabitatDataMissingError,
    check_hab_data,
    missing_hab_data,
    needed_paths,
    source_of,
)

REPO = Path(__file__).resolve().parents[2]
HIDE_SIM = Path(__file__).with_name("run_without_habitat_sim.py")
HAB_CONFIGS = [n for n in config_names() if n.startswith(("rearrange/", "hab/"))]
# Every rearrange/* and hab/* config reads these four downloads, in this order.
FOLDERS = [
    "data/datasets/replica_cad/rearrange/ (HAB rearrangement episodes, uid rearrange_dataset_v2)",
    "data/replica_cad/ (ReplicaCAD scenes, uid replica_cad_dataset)",
    "data/objects/ycb/ (YCB objects, uid ycb)",
    "data/robots/hab_fetch/ (Fetch robot, uid hab_fetch)",
]
COMMAND = (
    "`python -m habitat_sim.utils.datasets_download --uids rearrange_dataset_v2 "
    "replica_cad_dataset ycb hab_fetch --data-path data/`"
)


def test_hab_configs_are_all_found():
    # 10 skills, 6 scenarios, their oracle-skill runs, Tidy House with the
    # learned pick and Set Table with the learned open skills among oracle
    # skills; a new config is covered automatically.
    oracle = [n for n in HAB_CONFIGS if n.endswith("_oracle")]
    assert len(oracle) == 3
    assert len(HAB_CONFIGS) == 16 + len(oracle) + 2


@pytest.mark.parametrize(
    "path, expected",
    [
        (
            "data/robots/hab_fetch/robots/hab_suction.urdf",
            ("hab_fetch", "data/robots/hab_fetch", "data/"),
        ),
        # The episodes are under datasets/replica_cad/, not ReplicaCAD's replica_cad/.
        (
            "/big/disk/data/datasets/replica_cad/rearrange/v2/train/rearrange_easy.json.gz",
            (
                "rearrange_dataset_v2",
                "/big/disk/data/datasets/replica_cad/rearrange",
                "/big/disk/data/",
            ),
        ),
        ("replica_cad/", ("replica_cad_dataset", "replica_cad", "./")),
        ("data/somewhere/else.json", (None, "data/somewhere/else.json", None)),
    ],
)
def test_source_of_maps_paths_to_uids(path, expected):
    assert source_of(path) == expected


@pytest.mark.parametrize("name", HAB_CONFIGS)
def test_every_hab_config_names_the_missing_folders_and_uids(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = get_config(name)
    with pytest.raises(HabitatDataMissingError) as raised:
        check_hab_data(config)
    message = str(raised.value)
    assert "\n" not in message
    assert message == (
        f"rearrangement data is missing (relative to {tmp_path}): "
        f"{', '.join(FOLDERS)}; fetch it with {COMMAND}"
    )


def _make_data(root: Path, config, skip: str = "") -> None:
    """Create every path ``config`` reads, except those under ``skip``."""
    for m in missing_hab_data(config):
        if skip and m.path.startswith(skip):
            continue
        path = root / m.path
        if m.path.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Files that are read before any env starts hold the least they must.
            if m.path.endswith(".json.gz"):
                path.write_bytes(_episodes())
            elif m.path.endswith(".urdf"):
                path.write_text("<robot/>")
            else:
                path.write_text("")


def test_only_the_missing_download_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = get_config("rearrange/ver_open_fridge")
    _make_data(tmp_path, config, skip="data/robots/")
    with pytest.raises(
        HabitatDataMissingError,
        match=(
            r"data/robots/hab_fetch/ \(Fetch robot, uid hab_fetch\); fetch it with "
            r"`python -m habitat_sim\.utils\.datasets_download --uids hab_fetch "
            r"--data-path data/`$"
        ),
    ):
        check_hab_data(config)
    _make_data(tmp_path, config)
    check_hab_data(config)  # everything there: no error


def test_the_val_split_file_is_the_one_checked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = get_config("hab/tidy_house")
    _make_data(tmp_path, config)
    check_hab_data(config)
    train = "data/datasets/replica_cad/rearrange/v2/train/tidy_house_10k_1k.json.gz"
    os.makedirs(os.path.dirname(train))
    os.rename("data/datasets/replica_cad/rearrange/v2/val/tidy_house_10k_1k.json.gz", train)
    # The train split is there: the val split is named, and what fetches it.
    with pytest.raises(ConfigError) as raised:
        check_hab_data(config)
    assert str(raised.value).startswith("habitat_baselines.eval.split='val' is not allowed: ")
    assert str(raised.value).endswith(
        "the splits there are train; to use this split, download it again with "
        "`python -m habitat_sim.utils.datasets_download --uids rearrange_dataset_v2 "
        "--data-path data/`"
    )
    os.remove(train)
    with pytest.raises(HabitatDataMissingError, match="--uids rearrange_dataset_v2 --data-path"):
        check_hab_data(config)


def test_a_misspelled_split_of_generated_data_names_the_splits_there_are(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = get_config("rearrange/ver_pick", ["hab_data=generated"])
    _make_data(tmp_path, config)
    val = config.habitat.dataset.data_path.format(split="val")
    os.makedirs(os.path.dirname(val))
    os.link(next(p for _, p in needed_paths(config)), val)
    config = get_config("rearrange/ver_pick", ["hab_data=generated", "habitat.dataset.split=vall"])
    with pytest.raises(ConfigError) as raised:
        check_hab_data(config)
    assert str(raised.value) == (
        "habitat.dataset.split='vall' is not allowed: there is no "
        "data/datasets/hab_ver/v1/vall/rearrange_easy.json.gz (habitat.dataset.data_path="
        "'data/datasets/hab_ver/v1/{split}/rearrange_easy.json.gz'); the splits there are "
        "train, val; to use this split, make it again with "
        "`python -m habitat_ver.tools.make_hab_dataset --assets "
        "<folder with replica_cad/ and robots/hab_fetch/>`"
    )


def test_a_trainer_built_without_its_data_raises_and_does_not_exit(tmp_path, monkeypatch):
    from habitat_ver.compat import sim_free
    from habitat_ver.run import get_trainer_class

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sim_free, "is_active", lambda: False)  # as with habitat-sim
    config = get_config("rearrange/ver_pick", ["hab_data=generated"])
    # A library call: a program or test that builds a trainer can catch it.
    with pytest.raises(HabitatDataMissingError, match="^rearrangement data is missing"):
        get_trainer_class("ver")(config)


def test_embedded_env_configs_are_not_checked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    check_hab_data(get_config("gym/ddppo_cartpole"))


@pytest.mark.sim
def test_table_matches_the_installed_datasets_download():
    from habitat_sim.utils import datasets_download

    datasets_download.initialize_test_data_sources(data_path="data/")  # fills a global
    for uid, (link, _) in DATA_SOURCES.items():
        assert datasets_download.data_sources[uid]["link"] == "data/" + link, uid


def _run_cli(runner, module: str, config_name: str, cwd: Path) -> subprocess.CompletedProcess:
    # PYTHONPATH: an editable install exposes the hydra_plugins namespace
    # package to Hydra's plugin discovery only from the repository folder.
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, *runner, module, f"--config-name={config_name}"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def _assert_data_error(done, program: str, cwd: Path) -> str:
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith(f"{program}: error:")]
    assert len(lines) == 1, done.stderr[-3000:]
    assert (
        f"rearrangement data is missing (relative to {cwd}): {', '.join(FOLDERS)}; "
        f"fetch it with {COMMAND}" in lines[0]
    )
    return lines[0]


@pytest.mark.sim
@pytest.mark.parametrize(
    "module, name",
    [
        ("habitat_ver.run", "rearrange/ver_pick"),
        ("habitat_baselines.run", "hab/tidy_house"),
    ],
)
def test_cli_with_the_real_simulator_reports_missing_data(module, name, tmp_path):
    line = _assert_data_error(_run_cli(["-m"], module, name, tmp_path), module, tmp_path)
    assert "habitat-sim is not installed" not in line


def test_cli_in_sim_free_mode_names_habitat_sim_and_the_data(tmp_path):
    done = _run_cli([str(HIDE_SIM)], "habitat_ver.run", "rearrange/ver_open_fridge", tmp_path)
    line = _assert_data_error(done, "habitat_ver.run", tmp_path)
    assert "'RearrangeSim-v0'" in line and "conda install habitat-sim" in line


MESH_URDF = (
    "<robot><link><visual><geometry><mesh filename='m.glb'/></geometry></visual></link></robot>"
)


def _generated_tree(root, episodes=b"", urdf=MESH_URDF):
    """make_hab_dataset's layout under ``root/data``, with the given file contents."""
    data = root / "data"
    episode_file = data / "datasets" / "hab_ver" / "v1" / "train" / "rearrange_easy.json.gz"
    episode_file.parent.mkdir(parents=True)
    episode_file.write_bytes(episodes)
    (data / "hab_ver").mkdir()
    robots = data / "robots" / "hab_fetch" / "robots"
    robots.mkdir(parents=True)
    (robots / "hab_suction.urdf").write_text(urdf)
    (robots / "m.glb").write_bytes(b"mesh")
    return episode_file


def _episodes(*scene_datasets):
    import gzip
    import json

    episodes = [
        {"scene_dataset_config": s, "scene_id": "hab_ver_apartment"} for s in scene_datasets
    ]
    return gzip.compress(json.dumps({"episodes": episodes}).encode())


def test_generated_data_missing_names_our_generator(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = get_config("rearrange/ver_pick", ["hab_data=generated"])
    with pytest.raises(HabitatDataMissingError) as raised:
        check_hab_data(config)
    message = str(raised.value)
    assert "data/datasets/hab_ver/ (habitat-ver's HAB episodes)" in message
    assert "data/hab_ver/ (habitat-ver's HAB apartment)" in message
    assert "data/robots/hab_fetch/ (Fetch robot, uid hab_fetch)" in message
    assert "--uids hab_fetch --data-path data/" in message
    assert "python -m habitat_ver.tools.make_hab_dataset --assets" in message
    assert "uids rearrange_dataset_v2" not in message


def test_a_corrupt_generated_episode_file_is_one_line_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _generated_tree(tmp_path, episodes=b"\x8b\x00not gzip at all")
    config = get_config("rearrange/ver_pick", ["hab_data=generated"])
    with pytest.raises(ConfigError) as raised:
        check_hab_data(config)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(
        "habitat.dataset.data_path: the episode file "
        "'data/datasets/hab_ver/v1/train/rearrange_easy.json.gz' is not a gzip file"
    )
    assert message.endswith(
        "make it again with `python -m habitat_ver.tools.make_hab_dataset "
        "--assets <folder with replica_cad/ and robots/hab_fetch/>`"
    )


def test_an_episodes_missing_scene_dataset_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _generated_tree(tmp_path, episodes=_episodes("data/hab_ver/hab_ver.scene_dataset_config.json"))
    config = get_config("rearrange/ver_pick", ["hab_data=generated"])
    with pytest.raises(
        ConfigError,
        match=r"names the scene dataset config "
        r"'data/hab_ver/hab_ver.scene_dataset_config.json', which does not exist",
    ):
        check_hab_data(config)
    (tmp_path / "data" / "hab_ver" / "hab_ver.scene_dataset_config.json").write_text("{}")
    check_hab_data(config)  # all there


@pytest.mark.parametrize(
    "urdf, expected",
    [
        ("<robot><link>", r"the robot URDF '.*hab_suction.urdf' cannot be read: no element found"),
        (
            "<robot><link><visual><geometry><mesh filename='gone.dae'/></geometry></visual>"
            "</link></robot>",
            r"the robot URDF '.*' names 1 mesh file\(s\) that do not exist, e.g. 'gone.dae'",
        ),
    ],
)
def test_a_robot_urdf_that_would_not_load_is_named(tmp_path, monkeypatch, urdf, expected):
    monkeypatch.chdir(tmp_path)
    scene = "data/hab_ver/hab_ver.scene_dataset_config.json"
    _generated_tree(tmp_path, episodes=_episodes(scene), urdf=urdf)
    (tmp_path / scene).write_text("{}")
    config = get_config("rearrange/ver_pick", ["hab_data=generated"])
    with pytest.raises(
        ConfigError, match="habitat.simulator.agents.main_agent.articulated_agent_urdf: " + expected
    ):
        check_hab_data(config)


def test_an_object_whose_config_is_nowhere_is_named(tmp_path, monkeypatch):
    import gzip
    import json

    monkeypatch.chdir(tmp_path)
    scene = "data/hab_ver/hab_ver.scene_dataset_config.json"
    episode = {
        "scene_dataset_config": scene,
        "rigid_objs": [["cup.object_config.json", []], ["plate.object_config.json", []]],
    }
    _generated_tree(tmp_path, episodes=gzip.compress(json.dumps({"episodes": [episode]}).encode()))
    objects = tmp_path / "data" / "replica_cad" / "configs" / "objects"
    objects.mkdir(parents=True)
    (objects / "cup.object_config.json").write_text("{}")
    # Paths relative to the scene dataset config's folder, as habitat-sim reads them.
    (tmp_path / scene).write_text(
        json.dumps({"objects": {"paths": {".json": ["../replica_cad/configs/objects"]}}})
    )
    config = get_config("rearrange/ver_pick", ["hab_data=generated"])
    with pytest.raises(ConfigError) as raised:
        check_hab_data(config)
    assert "adds the object 'plate.object_config.json', whose config is in none of " in str(
        raised.value
    )
    assert "replica_cad/configs/objects" in str(raised.value)
    (objects / "plate.object_config.json").write_text("{}")
    check_hab_data(config)  # every object found


def test_a_missing_object_folder_matters_only_for_the_objects_episodes_add(tmp_path, monkeypatch):
    # The YCB folder was refused although no episode placed a YCB object.
    import gzip
    import json

    monkeypatch.chdir(tmp_path)
    scene = "data/hab_ver/hab_ver.scene_dataset_config.json"
    adds = [["cup.object_config.json", []]]
    episodes = lambda: gzip.compress(  # noqa: E731
        json.dumps({"episodes": [{"scene_dataset_config": scene, "rigid_objs": adds}]}).encode()
    )
    episode_file = _generated_tree(tmp_path, episodes=episodes())
    objects = tmp_path / "data" / "replica_cad" / "configs" / "objects"
    objects.mkdir(parents=True)
    (objects / "cup.object_config.json").write_text("{}")
    (tmp_path / scene).write_text(
        json.dumps({"objects": {"paths": {".json": ["../replica_cad/configs/objects"]}}})
    )
    ycb = "data/objects/ycb/configs/"
    config = get_config(
        "rearrange/ver_pick",
        ["hab_data=generated", f"habitat.simulator.additional_object_paths=[{ycb}]"],
    )
    check_hab_data(config)  # the cup is ReplicaCAD's
    adds.append(["024_bowl.object_config.json", []])
    episode_file.write_bytes(episodes())
    with pytest.raises(ConfigError) as raised:
        check_hab_data(config)
    assert "adds the object '024_bowl.object_config.json'" in str(raised.value)
    assert str(raised.value).endswith(
        f"{ycb} does not exist: fetch it with `python -m habitat_sim.utils.datasets_download "
        "--uids ycb --data-path data/`"
    )


def test_missing_hab_data_beside_our_generated_data_says_hab_data_generated(tmp_path, monkeypatch):
    # make_hab_dataset ran here (it links replica_cad/ and robots/hab_fetch/),
    # and the command left out hab_data=generated.
    monkeypatch.chdir(tmp_path)
    for folder in ("data/hab_ver", "data/datasets/hab_ver/v1", "data/replica_cad"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "data/robots/hab_fetch/robots").mkdir(parents=True)
    (tmp_path / "data/robots/hab_fetch/robots/hab_suction.urdf").write_text("<robot/>")
    with pytest.raises(HabitatDataMissingError) as raised:
        check_hab_data(get_config("rearrange/ver_pick"))
    assert str(raised.value) == (
        f"rearrangement data is missing (relative to {tmp_path}): "
        "data/datasets/replica_cad/rearrange/ (HAB rearrangement episodes, uid "
        "rearrange_dataset_v2), data/objects/ycb/ (YCB objects, uid ycb); data/ holds the "
        "apartment and episodes make_hab_dataset made: add `hab_data=generated` to the "
        "command to use them; or fetch HAB's downloads with `python -m "
        "habitat_sim.utils.datasets_download --uids rearrange_dataset_v2 ycb --data-path data/`"
    )


def test_a_file_missing_from_a_linked_robot_folder_is_named_not_the_folder(tmp_path, monkeypatch):
    # make_hab_dataset's data/robots/hab_fetch is a link to the assets' copy;
    # hab_suction.urdf was deleted there.  It was reported as the whole Fetch
    # folder missing, with a hub download command.
    monkeypatch.chdir(tmp_path)
    scene = "data/hab_ver/hab_ver.scene_dataset_config.json"
    _generated_tree(tmp_path, episodes=_episodes(scene))
    (tmp_path / scene).write_text("{}")
    assets = tmp_path / "assets" / "robots"
    assets.mkdir(parents=True)
    (tmp_path / "data/robots/hab_fetch").rename(assets / "hab_fetch")
    (tmp_path / "data/robots/hab_fetch").symlink_to(assets / "hab_fetch")
    (assets / "hab_fetch/robots/hab_suction.urdf").unlink()
    with pytest.raises(HabitatDataMissingError) as raised:
        check_hab_data(get_config("rearrange/ver_pick", ["hab_data=generated"]))
    assert str(raised.value) == (
        f"rearrangement data is missing (relative to {tmp_path}): "
        "data/robots/hab_fetch/robots/hab_suction.urdf "
        "(habitat.simulator.agents.main_agent.articulated_agent_urdf): the Fetch robot folder "
        f"data/robots/hab_fetch/ is there (a link to {assets / 'hab_fetch'}) but this file is "
        "not; restore it there"
    )


def test_a_file_missing_from_a_downloaded_folder_is_named_with_its_download(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = get_config("rearrange/ver_open_fridge")
    _make_data(tmp_path, config)
    os.remove("data/robots/hab_fetch/robots/hab_suction.urdf")
    with pytest.raises(HabitatDataMissingError) as raised:
        check_hab_data(config)
    assert str(raised.value).endswith(
        ": data/robots/hab_fetch/robots/hab_suction.urdf "
        "(habitat.simulator.agents.main_agent.articulated_agent_urdf): the Fetch robot folder "
        "data/robots/hab_fetch/ is there but this file is not; download it again with "
        "`python -m habitat_sim.utils.datasets_download --uids hab_fetch --data-path data/`"
    )
