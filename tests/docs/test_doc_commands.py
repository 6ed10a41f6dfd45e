"""Every command in the docs' code blocks runs as written, or says why not here.

:data:`TABLE` maps each command that ``doc_commands.read_docs`` finds in
README.md, CONTRIBUTING.md, docs/*.md and habitat_ver/envs/README.md to
exactly one row:

- :class:`Run`: the command's own text runs through ``bash -c`` in a user
  folder (``tests/user_folders.py``: an empty folder laid out as a checkout
  beside ``shared/``, the venv's ``bin`` first on PATH), with only a budget
  appended (updates, episodes), after the documented commands that make its
  data; then a check of what it left behind (checkpoint, step count, metrics,
  report files), beyond its exit status.
- :class:`NotRun`: a reason that is a fact about this machine, and where the
  fact is cheap to check, the check (no conda here; the error that HAB's
  missing hub downloads give).
- :class:`Benchmark`: a ``benchmarks/`` script or ``python -m benchmarks``; its
  documented arguments are parsed by the script's own parser, nothing is
  benchmarked.
- :class:`AlsoRunBy`: another test already runs this command's text; it is not
  run twice.  :class:`SameAs`: the same command as a :class:`Run` row, spelled
  ``python`` for ``.venv/bin/python`` (one interpreter with the venv first on
  PATH).

The coverage test fails when a documented command has no row, and when a row
names a command that no doc has any more.
"""

import gzip
import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import pytest
import torch

from habitat_ver.config.compose import config_names, get_config
from habitat_ver.config.hab_data import HabitatDataMissingError, check_hab_data
from tests.user_folders import (
    HAB_ARRANGEMENTS,
    HAB_DATA_BUDGET,
    HAB_DATA_COMMAND,
    HAB_TRAIN,
    HAB_VAL,
    POINTNAV_DATA_BUDGET,
    POINTNAV_DATA_COMMAND,
    REPO,
    TRAIN_EPISODES,
    VAL_EPISODES,
    Ran,
    UserFolder,
    lay_out,
)

from .doc_commands import commands_by_text, read_docs

Check = Callable[[Ran, Path], None]
Budget = Union[Tuple[str, ...], Callable[[Path], Tuple[str, ...]]]


@dataclass(frozen=True)
class Run:
    budget: Budget  # appended to the command (or made from the user folder)
    check: Check  # what the run must have done, beyond exit status 0
    folder: str = ""  # a session-wide user folder shared with other rows ("": a fresh one)
    after: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()  # (command, budget) run there first
    needs: Tuple[str, ...] = ()  # fixtures that make its data
    prepare: Optional[Callable[[Path, pytest.FixtureRequest], None]] = None
    sim: bool = False  # needs the real habitat-sim
    in_checkout: bool = False  # runs in the checkout (make's targets)


@dataclass(frozen=True)
class NotRun:
    reason: str  # a fact about this machine
    check: Optional[Callable[[str], None]] = None  # checks it, given the command


@dataclass(frozen=True)
class Benchmark:
    pass


@dataclass(frozen=True)
class AlsoRunBy:
    test: str  # "tests/<file>.py::<test>" that runs this command
    differs: str  # what that test changes: its budget, its folders


@dataclass(frozen=True)
class SameAs:
    command: str  # a Run row's command, spelled with .venv/bin/python


Row = Union[Run, NotRun, Benchmark, AlsoRunBy, SameAs]


# ---- what a run must leave behind -------------------------------------------------------


def _load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=False)


def trained(
    config: str, updates: int = 1, more: Optional[Check] = None, steps: Optional[int] = None
) -> Check:
    """Checkpoints in ``outputs/<config>/``; ``updates`` updates of N*T steps
    each (ddppo, ver; appo: batch_trajectories*T), or ``steps`` steps, in the
    resume state and the run's summary."""

    def check(ran: Ran, folder: Path) -> None:
        out = folder / "outputs" / config
        latest = _load(out / "checkpoints" / "latest.pth")
        stats = _load(out / "checkpoints" / "resume-state.pth")["requeue_stats"]
        baselines = latest["config"]["habitat_baselines"]
        if baselines["trainer_name"] in ("ddppo", "ver"):
            per_update = baselines["num_environments"] * baselines["rl"]["ppo"]["num_steps"]
        else:  # appo: batch_trajectories trajectories of T steps per update
            appo = baselines["rl"]["appo"]
            per_update = appo["batch_trajectories"] * baselines["rl"]["ppo"]["num_steps"]
        done = updates if steps is None else steps // per_update
        expected = (done * per_update, done)
        assert (stats["num_steps_done"], stats["num_updates_done"]) == expected, (stats, expected)
        # The run's summary says so, and train.log has its first update line.
        summary = rf"Training finished: {done * per_update} steps in {done} updates\b"
        assert re.search(summary, ran.stdout), ran.tail()
        assert re.search(r"update: \d+\tsteps: \d+\t", (out / "train.log").read_text())
        if more is not None:
            more(ran, folder)

    return check


def logged(key: str) -> Check:
    """``key`` among the logged values of ``train.log``'s last update."""

    def check(ran: Ran, folder: Path) -> None:
        config = re.search(r"--config-name=(\S+)", ran.command)
        assert config is not None
        log = (folder / "outputs" / config.group(1) / "train.log").read_text()
        assert re.search(rf"{re.escape(key)}: [-0-9.e]+", log), log[-3000:]

    return check


def evaluated(config: str, episodes: int, metrics: Sequence[str]) -> Check:
    """The run's checkpoint evaluated on ``episodes`` episodes, ``metrics`` printed."""

    def check(ran: Ran, folder: Path) -> None:
        text = ran.stdout + ran.stderr
        assert f"evaluating outputs/{config}/checkpoints/ckpt.0.pth" in text, ran.tail()
        assert re.search(rf"\b{episodes} episode", text), ran.tail()
        for metric in metrics:
            assert re.search(rf"Average episode {metric}: [-0-9.]+", text), (metric, ran.tail())

    return check


def pointnav_data_made(ran: Ran, folder: Path) -> None:
    root = folder / "data" / "datasets" / "pointnav" / "simple_room" / "v1"
    for split, count in (("train", TRAIN_EPISODES), ("val", VAL_EPISODES)):
        episodes = json.loads(gzip.decompress((root / split / f"{split}.json.gz").read_bytes()))
        assert len(episodes["episodes"]) == count, split
    assert (folder / "data" / "scene_datasets" / "habitat_ver" / "simple_room.glb").is_file()


def hab_data_made(ran: Ran, folder: Path) -> None:
    from habitat_ver.tools import make_hab_dataset as tool

    root = folder / "data" / tool.EPISODES_SUBDIR
    for split, count in (("train", HAB_TRAIN), ("val", HAB_VAL)):
        files = sorted((root / split).glob("*.json.gz"))
        assert len(files) == len(tool.DATASETS), files
        for path in files:
            assert len(json.loads(gzip.decompress(path.read_bytes()))["episodes"]) == count, path
    # One scene per arrangement asked for (train and val).
    scenes = list((folder / "data" / "hab_ver" / "scenes").glob("*.scene_instance.json"))
    assert len(scenes) == sum(HAB_ARRANGEMENTS), scenes


def drawer_episodes_made(ran: Ran, folder: Path) -> None:
    from habitat_ver.tools import make_hab_dataset as tool

    # only the open/close drawer episodes, in the folder asked for
    root = folder / "drawer200" / tool.EPISODES_SUBDIR
    for split, count in (("train", HAB_TRAIN), ("val", HAB_VAL)):
        files = sorted(p.name for p in (root / split).glob("*.json.gz"))
        assert files == ["in_drawer_1k_100.json.gz"], files
        episodes = json.loads(gzip.decompress((root / split / files[0]).read_bytes()))
        assert len(episodes["episodes"]) == count, split


def ver_policy_checkpoint(ran: Ran, folder: Path) -> None:
    latest = _load(folder / "outputs" / "rearrange" / "ver_pick" / "checkpoints" / "latest.pth")
    policy = latest["config"]["habitat_baselines"]["rl"]["policy"]["main_agent"]["name"]
    assert policy == "VERPolicy"
    # Where CUDA sees no GPU, the CPU profile: no visual encoder, a 2-layer
    # LSTM of 128 units (the paper's encoder: tests/hab/test_hab_real.py).
    weights = latest["state_dict"]
    assert not [k for k in weights if k.startswith("net.visual_encoder.")]
    width = 512 if torch.cuda.is_available() else 128
    assert weights["net.state_encoder.rnn.rnn.weight_hh_l1"].shape == (4 * width, width)


_STAGE = re.compile(r"Average episode pddl_stage_goals\.stage_\S+_success: ([0-9.]+)")
_SUCCESS = re.compile(r"Average episode pddl_success: ([0-9.]+)")


def oracle_solved(scenario: str) -> Check:
    def check(ran: Ran, folder: Path) -> None:
        log = (folder / "outputs" / "hab" / f"{scenario}_oracle" / "eval.log").read_text()
        stages, success = _STAGE.findall(log), _SUCCESS.findall(log)
        # Oracle navigation and the actions' effects solve the episode.
        assert stages and success, log[-3000:]
        assert float(success[-1]) == 1.0 and all(float(s) == 1.0 for s in stages), (
            success,
            stages,
        )

    return check


def learned_pick_evaluated(ran: Ran, folder: Path) -> None:
    """Every stage reported, and no later stage above holding the first object:
    place and navigation are the oracle's, so nothing succeeds past a failed pick."""
    log = (folder / "outputs" / "hab" / "tidy_house_learned_pick" / "eval.log").read_text()
    stages = dict(re.findall(r"pddl_stage_goals\.stage_(\S+)_success: ([0-9.]+)", log))
    success = _SUCCESS.findall(log)
    assert len(stages) == 9 and success, log[-3000:]
    assert all(float(v) <= float(stages["0_5"]) for v in stages.values()), stages
    assert float(success[-1]) <= float(stages["0_5"]), (success, stages)


def learned_open_evaluated(ran: Ran, folder: Path) -> None:
    """Set Table's four stages reported; pick and place are the oracle's, so the
    bowl is placed no more often than the learned open drawer let it be held."""
    log = (folder / "outputs" / "hab" / "set_table_learned_open" / "eval.log").read_text()
    stages = dict(re.findall(r"pddl_stage_goals\.stage_(\S+)_success: ([0-9.]+)", log))
    success = _SUCCESS.findall(log)
    assert sorted(stages) == ["0_5", "1", "1_5", "2"] and success, log[-3000:]
    assert float(stages["1"]) <= float(stages["0_5"]), stages
    # The CPU profile loads the shipped open skills.
    config = (
        folder / "outputs" / "hab" / "set_table_learned_open" / "eval_config.yaml"
    ).read_text()
    assert (
        "skill_checkpoints/open_cab.pth" in config and "skill_checkpoints/open_fridge.pth" in config
    )


def pick_trained(path: Path, request: pytest.FixtureRequest) -> None:
    """The documented ver_pick run's checkpoint (the learned pick's default path)."""
    if not (path / "outputs" / "rearrange" / "ver_pick" / "checkpoints" / "latest.pth").exists():
        folder = request.getfixturevalue("user_folders").get("hab")
        ran = folder.run(VER_PICK_COMMAND, ONE_UPDATE, sim=True)
        assert ran.returncode == 0, ran.tail()


def report_written(runs: int) -> Check:
    """stage_success.md with one row per ``--run``, its full-task column the
    log's pddl_success in percent; a non-empty stage_success.png."""

    def check(ran: Ran, folder: Path) -> None:
        report = folder / "outputs" / "hab" / "report"
        assert (report / "stage_success.png").stat().st_size > 1000
        lines = [ln for ln in (report / "stage_success.md").read_text().splitlines() if ln]
        header = [cell.strip() for cell in lines[0].strip("|").split("|")]
        rows = [ln for ln in lines[1:] if not set(ln) <= set("|-: ")]
        assert len(rows) == runs, lines
        column = header.index("full task")
        for row in rows:
            # The stand-in logs are the oracle runs': the whole task solved.
            assert row.strip("|").split("|")[column].strip() == "100.0", (header, row)

    return check


def link_pointnav_data(folder: Path, request: pytest.FixtureRequest) -> None:
    """The README's PointNav data (fixture ``pointnav_data``) in a folder of its own."""
    (folder / "data").symlink_to(request.getfixturevalue("pointnav_data"))


def copy_oracle_logs(names: Sequence[str]) -> Callable[[Path, pytest.FixtureRequest], None]:
    """Put ``outputs/<name>/eval.log`` where the report command reads it.

    The report reads evaluation logs of ``hab/<scenario>[_nonav]``, runs that
    need HAB's hub data and nine trained skills (below: not here).  Each log
    stands in with its scenario's oracle-skill evaluation log (fixture
    ``hab_oracle_logs``): the same upstream evaluator and log lines."""

    def prepare(folder: Path, request: pytest.FixtureRequest) -> None:
        logs = request.getfixturevalue("hab_oracle_logs")
        for name in names:
            scenario = name[len("hab/") :].replace("_nonav", "")
            target = folder / "outputs" / name / "eval.log"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(logs[f"hab/{scenario}_oracle"], target)

    return prepare


# ---- what is true of this machine ---------------------------------------------------------


def no_conda(command: str) -> None:
    assert shutil.which("conda") is None, "conda is here now: run the conda commands"


def hub_data_missing(command: str) -> None:
    """The command's config, composed as its command line says, in an empty
    folder: the one-line error naming HAB's downloads (as the CLI prints it:
    tests/hab/test_hab_data.py runs both command lines)."""
    args = shlex.split(command)
    name = next(a.split("=", 1)[1] for a in args if a.startswith("--config-name="))
    overrides = [a for a in args[args.index(f"--config-name={name}") + 1 :] if "=" in a]
    with pytest.raises(HabitatDataMissingError) as raised:
        check_hab_data(get_config(name, overrides))
    message = str(raised.value)
    assert "\n" not in message and "python -m habitat_sim.utils.datasets_download" in message


def fewer_than_8_gpus(command: str) -> None:
    assert torch.cuda.device_count() < 8


def not_in_our_tree(command: str) -> None:
    assert "pointnav/ddppo_pointnav" not in config_names()
    assert (REPO / "tests" / "fixtures" / "upstream_configs" / "pointnav").is_dir()


# ---- the table ----------------------------------------------------------------------------

ONE_UPDATE = ("habitat_baselines.num_updates=1", "habitat_baselines.total_num_steps=-1")
VER_PICK_COMMAND = (
    "python -m habitat_baselines.run --config-name=rearrange/ver_pick hab_data=generated"
)
EPISODES_2 = ("habitat_baselines.test_episode_count=2",)
NETWORK = "needs the network (GitHub, PyPI, HAB's hub): our machines reach none of them"
CONDA = (
    "conda is not installed here: habitat-sim comes from ../shared/habitat-sim's wheel "
    "(make install)"
)
HUB_DATA = (
    "reads HAB's hub downloads (hab_data=replica_cad, the default: ReplicaCAD apartments, YCB, "
    "hab_fetch, HAB's episodes), which are not on this machine; checked: the one-line error "
    "naming datasets_download"
)
SUITE = "runs tests of this suite, which make test runs (tests/docs checks the paths exist)"
HAB_SKILLS = ("pick", "place", "nav_to_obj", "open_fridge", "close_fridge", "open_cab", "close_cab")
SCENARIOS = ("tidy_house", "prepare_groceries", "set_table")
REPORT_README = ("hab/tidy_house", "hab/tidy_house_nonav")
REPORT_HAB = tuple(f"hab/{s}{m}" for s in SCENARIOS for m in ("", "_nonav"))
CARTPOLE = ".venv/bin/python -m habitat_ver.run --config-name=gym/ddppo_cartpole"
MIXED = ".venv/bin/python -m habitat_ver.run --config-name=doom/ddppo_mixed_stragglers"
MY_WAY_HOME = "python -m habitat_ver.run --config-name=doom/ddppo_my_way_home"
STRAGGLER = "habitat_baselines.embedded_env.straggler"
PN = ".venv/bin/python -m habitat_baselines.run --config-name=pointnav"
DEMO_OUT = "outputs/doom/ver_defend_the_center"
VER_CARTPOLE_768 = (
    "python -m habitat_ver.run --config-name=gym/ver_cartpole habitat_baselines.total_num_steps=768"
)
VER_CARTPOLE_1536 = VER_CARTPOLE_768.replace("=768", "=1536")
CPCA_LOSS = "learner/aux/cpca/loss"


def demo_budget(folder: Path) -> Tuple[str, ...]:
    """make demo's overrides (DEMO_ARGS): the budget, and its folders moved out
    of the checkout (make runs in the checkout, where a demo of your own may be)."""
    out = folder / DEMO_OUT
    return (
        "DEMO_ARGS="
        + " ".join(
            ONE_UPDATE
            + (
                f"habitat_baselines.checkpoint_folder={out}/checkpoints",
                f"habitat_baselines.tensorboard_dir={out}/tb",
                f"habitat_baselines.log_file={out}/train.log",
                f"hydra.run.dir={folder}/hydra",
            )
        ),
    )


def _report(names: Sequence[str]) -> str:
    runs = " ".join(f"--run {n}={'outputs/' + n + '/eval.log'}" for n in names)
    return f"python -m habitat_ver.tools.hab_stage_report {runs} --out outputs/hab/report"


def _report_row(names: Sequence[str]) -> Run:
    return Run(
        (),
        report_written(len(names)),
        needs=("hab_run_dir",),
        prepare=copy_oracle_logs(names),
        sim=True,
    )


def _pointnav_training(trainer: str) -> Run:
    config = f"pointnav/{trainer}_simple_room"
    return Run(ONE_UPDATE, trained(config), "pointnav", needs=("pointnav_data",), sim=True)


# The tests that run the video commands of docs/HAB.md.
VIDEO_TEST = (
    "tests/hab/test_hab_video.py::"
    "test_the_video_shows_the_third_person_camera_with_the_metrics_beside_it"
)
CONTACT_SHEET_TEST = (
    "tests/tools/test_video_contact_sheet.py::test_the_tool_writes_a_small_png_from_an_mp4"
)


TABLE: Dict[str, Row] = {
    # README.md: set-up
    "make demo": Run(demo_budget, trained("doom/ver_defend_the_center"), in_checkout=True),
    "make test": NotRun("the suite this test is part of (CI runs it: .ci/run); it would recurse"),
    "conda create -n habitat python=3.9 cmake=3.14.0": NotRun(CONDA, no_conda),
    "conda activate habitat": NotRun(CONDA, no_conda),
    "conda install habitat-sim withbullet -c conda-forge -c aihabitat": NotRun(CONDA, no_conda),
    "git clone --branch v0.3.3 https://github.com/facebookresearch/habitat-lab.git": NotRun(
        NETWORK
    ),
    "pip install -e habitat-lab/habitat-lab": NotRun(
        "installs the clone above (network); this venv has PyPI's habitat-lab 0.3.3 nightly"
    ),
    "pip install -e habitat-lab/habitat-baselines": NotRun(
        "installs the clone above (network); this venv has PyPI's habitat-baselines 0.3.3 nightly"
    ),
    "git clone <habitat-ver repository URL> habitat-ver": NotRun(
        "a placeholder URL: habitat-ver has no public repository yet"
    ),
    "pip install ./habitat-ver": NotRun(
        "installs the clone above, replacing this venv's editable install; what it would change "
        "in a Habitat setup is checked by tests/test_habitat_setup_install.py (pip --dry-run)"
    ),
    "python -m habitat_baselines.run --config-name=rearrange/ddppo_pick": NotRun(
        HUB_DATA, hub_data_missing
    ),
    "python -m habitat_baselines.run --config-name=pointnav/ddppo_pointnav "
    "habitat_baselines.trainer_name=ver 'habitat.dataset.content_scenes=[scene_a,scene_b]'": NotRun(
        "upstream's config comes with a habitat-lab checkout (network; PyPI's wheel ships no "
        "YAML) and scene_a/scene_b stand for its scenes; tests/trainers/"
        "test_upstream_pointnav_sim.py runs a copy of it with our trainers on four scenes",
        not_in_our_tree,
    ),
    # README.md: without habitat-sim
    CARTPOLE: Run(ONE_UPDATE, trained("gym/ddppo_cartpole"), folder="cartpole"),
    ".venv/bin/python -m habitat_ver.run --config-name=doom/ddppo_my_way_home "
    "habitat_baselines.num_environments=4": Run(ONE_UPDATE, trained("doom/ddppo_my_way_home")),
    MIXED: Run(ONE_UPDATE, trained("doom/ddppo_mixed_stragglers")),
    CARTPOLE + " habitat_baselines.evaluate=True": Run(
        EPISODES_2,
        evaluated("gym/ddppo_cartpole", 2, ["reward"]),
        folder="cartpole",
        after=((CARTPOLE, ONE_UPDATE),),
    ),
    # README.md: habitat-sim and PointNav
    POINTNAV_DATA_COMMAND: Run(
        POINTNAV_DATA_BUDGET, pointnav_data_made, "pointnav", needs=("pointnav_data",), sim=True
    ),
    f"{PN}/ddppo_simple_room": _pointnav_training("ddppo"),
    f"{PN}/ver_simple_room": _pointnav_training("ver"),
    f"{PN}/appo_simple_room": _pointnav_training("appo"),
    f"{PN}/ver_simple_room habitat_baselines.evaluate=True": Run(
        EPISODES_2,
        evaluated("pointnav/ver_simple_room", 2, ["success", "spl"]),
        "pointnav",
        ((f"{PN}/ver_simple_room", ONE_UPDATE),),
        ("pointnav_data",),
        sim=True,
    ),
    # README.md, docs/HAB.md: HAB skills and TP-SRL
    HAB_DATA_COMMAND: Run(HAB_DATA_BUDGET, hab_data_made, "hab", needs=("hab_run_dir",), sim=True),
    # docs/HAB.md: more train episodes for open drawer, where data/ was made (the
    # budget's counts win)
    f"{HAB_DATA_COMMAND} --out drawer200 --only in_drawer_1k_100 --episodes 200 10": Run(
        HAB_DATA_BUDGET, drawer_episodes_made, "hab", needs=("hab_run_dir",), sim=True
    ),
    VER_PICK_COMMAND: Run(
        ONE_UPDATE,
        trained("rearrange/ver_pick", more=ver_policy_checkpoint),
        "hab",
        needs=("hab_run_dir",),
        sim=True,
    ),
    "python -m habitat_baselines.run --config-name=hab/tidy_house_oracle hab_data=generated": Run(
        ("habitat_baselines.test_episode_count=1",),
        oracle_solved("tidy_house"),
        "hab",
        needs=("hab_run_dir",),
        sim=True,
    ),
    "python -m habitat_baselines.run --config-name=hab/tidy_house_learned_pick "
    "hab_data=generated": Run(
        ("habitat_baselines.test_episode_count=1",),
        learned_pick_evaluated,
        "hab",
        needs=("hab_run_dir",),
        prepare=pick_trained,
        sim=True,
    ),
    **{
        "torchrun --nproc_per_node 8 -m habitat_baselines.run "
        f"--config-name=rearrange/ver_{skill}": NotRun(
            "8 ranks, one GPU each: this machine has fewer than 8 GPUs (the one-process "
            "command of each skill is in docs/HAB.md, below)",
            fewer_than_8_gpus,
        )
        for skill in HAB_SKILLS + ("pick_nonav", "place_nonav")
    },
    **{
        f"python -m habitat_baselines.run --config-name=rearrange/ver_{skill}": NotRun(
            HUB_DATA, hub_data_missing
        )
        for skill in HAB_SKILLS + ("pick_nonav", "place_nonav")
    },
    **{
        f"python -m habitat_baselines.run --config-name=hab/{scenario}{method}": NotRun(
            HUB_DATA + "; tests/hab/test_hab_data.py runs hab/tidy_house's command line",
            hub_data_missing,
        )
        for scenario in SCENARIOS
        for method in ("", "_nonav")
    },
    _report(REPORT_README): _report_row(REPORT_README),
    _report(REPORT_HAB): _report_row(REPORT_HAB),
    "python -m habitat_sim.utils.datasets_download --uids rearrange_task_assets "
    "--data-path data/": NotRun(NETWORK),
    "python -m habitat_ver.tools.run_configs /tmp/oracle eval hab/tidy_house_oracle "
    "hab/prepare_groceries_oracle hab/set_table_oracle -- "
    "habitat_baselines.test_episode_count=10": AlsoRunBy(
        "tests/hab/test_hab_real.py::"
        "test_each_scenario_evaluates_with_oracle_skills_and_reports_its_stages",
        "one episode each instead of 10 (the budget), OUT in the session's HAB folder",
    ),
    "python -m habitat_baselines.run --config-name=hab/set_table_learned_open "
    "hab_data=generated": Run(
        ("habitat_baselines.test_episode_count=1",),
        learned_open_evaluated,
        "hab",
        needs=("hab_run_dir",),
        sim=True,
    ),
    "python -m habitat_ver.tools.run_configs /tmp/learned eval hab/tidy_house_nonav "
    "hab/prepare_groceries_nonav hab/set_table_nonav hab/tidy_house_learned_pick "
    "hab/set_table_learned_open -- "
    "habitat_baselines.test_episode_count=-1 habitat_baselines.eval.evals_per_ep=5": NotRun(
        "50 episodes of five evaluations (minutes each); the learned-skill configs run "
        "one episode each above, and tests/hab/test_hab_real.py evaluates the shipped pick"
    ),
    # docs/HAB.md: evaluation videos
    "python -m habitat_baselines.run --config-name=hab/tidy_house_oracle hab_data=generated "
    "habitat_baselines.test_episode_count=1 "
    "'habitat_baselines.eval.video_option=[disk]'": AlsoRunBy(
        VIDEO_TEST, "a 12-step episode (max_episode_steps=12) in the session's HAB folder"
    ),
    "python -m habitat_ver.tools.run_configs /tmp/video eval hab/tidy_house_oracle "
    "hab/prepare_groceries_oracle hab/set_table_oracle -- habitat_baselines.test_episode_count=1 "
    "'habitat_baselines.eval.video_option=[disk]' habitat.environment.max_episode_steps=240": (
        AlsoRunBy(VIDEO_TEST, "tidy_house_oracle alone, 12 steps instead of 240")
    ),
    "python -m habitat_ver.tools.video_contact_sheet outputs/hab/tidy_house_oracle/video/"
    "episode=*.mp4 --out tidy_house_oracle.png": AlsoRunBy(
        CONTACT_SHEET_TEST, "an 8-frame mp4 written by the test instead of an evaluation's"
    ),
    "python -m habitat_ver.tools.video_contact_sheet /tmp/video/hab_tidy_house_oracle/video/"
    "episode=*.mp4 --out docs/img/video_tidy_house_oracle.png --width 1120": AlsoRunBy(
        CONTACT_SHEET_TEST, "an 8-frame mp4 written by the test, --width 200"
    ),
    # README.md, docs/RUNNING.md: several processes
    "NUM_RANKS=2 CONFIG=gym/ver_cartpole bash examples/torchrun_single_node.sh": AlsoRunBy(
        "tests/test_examples.py::test_single_node_example_trains_on_two_ranks",
        "2 updates and the run's folders appended; MAIN_PORT a free port, one OMP thread",
    ),
    "torchrun --standalone --nproc_per_node 2 -m habitat_baselines.run "
    "--config-name=rearrange/ver_close_cab hab_data=generated": AlsoRunBy(
        "tests/hab/test_hab_ranks.py::"
        "test_ver_on_two_ranks_trains_a_hab_skill_with_preemption_and_stale_fill",
        "3 updates of 16 steps on 1 env per rank, in the session's HAB folder; "
        "MAIN_PORT a free port",
    ),
    "torchrun --standalone --nproc_per_node 2 -m habitat_baselines.run "
    "--config-name=pointnav/ver_simple_room": AlsoRunBy(
        "tests/sim/test_pointnav_ranks.py::"
        "test_ver_on_two_ranks_renders_on_each_ranks_device_and_preempts",
        "4 updates of 16 steps on 2 envs per rank, in a folder of its own with "
        "make_pointnav_dataset's data as overrides; MAIN_PORT a free port",
    ),
    # docs/APPO.md
    "python -m habitat_ver.run --config-name=gym/appo_cartpole": Run(
        ONE_UPDATE, trained("gym/appo_cartpole")
    ),
    "python -m habitat_ver.run --config-name=doom/appo_my_way_home": Run(
        ONE_UPDATE, trained("doom/appo_my_way_home")
    ),
    ".venv/bin/python -m pytest -q tests/trainers/test_appo.py tests/system/test_grouped_pool.py "
    "tests/algo/test_vtrace.py tests/updaters/test_targets.py": NotRun(SUITE),
    ".venv/bin/python -m pytest -q -m slow tests/trainers/test_appo.py": NotRun(SUITE),
    "HABITAT_VER_SIM_FREE=0 HABITAT_SIM_TEST_ASSETS=../shared/habitat-sim/data/test_assets "
    ".venv/bin/python -m pytest -q -s -m sim tests/sim/test_pointnav_learning.py": NotRun(SUITE),
    "python3.11 -m venv /tmp/sfvenv": NotRun(
        "makes the venv for the next line, which installs Sample Factory from PyPI (network)"
    ),
    "/tmp/sfvenv/bin/pip install -r benchmarks/requirements-sample-factory.txt": NotRun(NETWORK),
    "python3.11 -m venv /tmp/sfvenv && /tmp/sfvenv/bin/pip install -r "
    "benchmarks/requirements-sample-factory.txt": NotRun(NETWORK),
    # habitat_ver/envs/README.md
    MY_WAY_HOME: Run(ONE_UPDATE, trained("doom/ddppo_my_way_home")),
    f"{MY_WAY_HOME} {STRAGGLER}.enabled=True {STRAGGLER}.long_step_prob=0.01 "
    f"{STRAGGLER}.jitter=0.5": Run(ONE_UPDATE, trained("doom/ddppo_my_way_home")),
    "python -m habitat_ver.run --config-name=doom/ddppo_mixed_stragglers": SameAs(MIXED),
    f"{MY_WAY_HOME} {STRAGGLER}.enabled=True {STRAGGLER}.speed_factor_max=1.0 "
    f"{STRAGGLER}.slow_env_indices=[3] {STRAGGLER}.slow_factor=10": Run(
        ONE_UPDATE, trained("doom/ddppo_my_way_home")
    ),
    f"{MY_WAY_HOME} 'habitat_baselines.embedded_env.scenarios=[habitat_ver/DoomMyWayHome-v0,"
    "habitat_ver/DoomDeathmatchBots-v0]' habitat_baselines.embedded_env.resolution=[120,160]": Run(
        ONE_UPDATE, trained("doom/ddppo_my_way_home")
    ),
    "python -m habitat_ver.run --config-name=gym/ddppo_cartpole": SameAs(CARTPOLE),
    # docs/RUNNING.md: raising a finished run's budget (a budget of its own)
    # (a folder each: the second one's goes on past the first one's 768 steps)
    VER_CARTPOLE_768: Run((), trained("gym/ver_cartpole", steps=768)),
    VER_CARTPOLE_1536: Run(
        (), trained("gym/ver_cartpole", steps=1536), after=((VER_CARTPOLE_768, ()),)
    ),
    # docs/RUNNING.md: auxiliary losses (a folder each: a run of the same config
    # without the loss would be resumed with its stored config)
    "python -m habitat_ver.run --config-name=doom/ver_my_way_home aux_losses=cpca": Run(
        ONE_UPDATE, trained("doom/ver_my_way_home", more=logged(CPCA_LOSS))
    ),
    "python -m habitat_baselines.run --config-name=pointnav/ver_simple_room "
    "'+habitat_baselines/rl/auxiliary_losses@habitat_baselines.rl.auxiliary_losses.cpca=cpca'": Run(
        ONE_UPDATE,
        trained("pointnav/ver_simple_room", more=logged(CPCA_LOSS)),
        needs=("pointnav_data",),
        prepare=link_pointnav_data,
        sim=True,
    ),
    "python -m habitat_ver.run --config-name=doom/ddppo_my_way_home "
    "+habitat_baselines.rl.auxiliary_losses.cpca.loss_scale=0.05": Run(
        ONE_UPDATE, trained("doom/ddppo_my_way_home", more=logged(CPCA_LOSS))
    ),
}
# Every documented benchmarks/ command (docs/APPO.md, docs/BENCHMARKS.md, docs/HAB.md),
# a script or the tool (python -m benchmarks).
BENCHMARK_SCRIPT = re.compile(
    r"^(?:\w+=\S+ )*(?:\.venv/bin/)?python (?:benchmarks/\S+\.py|-m benchmarks)(?:\s|$)"
)
# Code blocks that hold no command, by first line.
TEXT_BLOCKS = {
    "habitat_ver/ the package; importing it registers everything": "CONTRIBUTING.md: the tree",
    "PPOTrainer (upstream)": "docs/ARCHITECTURE.md: the trainer classes",
    "limit = sum_i 1 / w_i = sum_i 1 / (s_i * (b + p * L_s))": "docs/BENCHMARKS.md: a formula",
    "data/replica_cad -> <assets>/replica_cad links: nothing is copied, nothing": (
        "docs/HAB.md: make_hab_dataset's output"
    ),
    "habitat:": "habitat_ver/envs/README.md: a config excerpt",
    "s_i * (base_step_seconds * J + long_step_seconds * L)": "envs/README.md: a formula",
    "habitat_ver: habitat_baselines.num_environments=4, but the data has 1 scene(s) and "
    "evaluation runs one environment per scene: evaluating with 1 environment(s)": (
        "docs/RUNNING.md: a warning line"
    ),
}
# Config names of upstream's tree, not ours (above).
UPSTREAM_CONFIGS = {"pointnav/ddppo_pointnav"}
REPO_PATH = re.compile(r"(?:^|[\s=])((?:benchmarks|tests|examples|docs|habitat_ver)/[\w./-]+)")


def row_of(command: str) -> Row:
    if command in TABLE:
        return TABLE[command]
    if BENCHMARK_SCRIPT.match(command):
        return Benchmark()
    raise KeyError(command)


# ---- coverage ----------------------------------------------------------------------------


DOCUMENTED = commands_by_text()


def test_every_documented_command_has_exactly_one_row():
    missing = [f"{where[0]}: {text}" for text, where in DOCUMENTED.items() if not _has_row(text)]
    assert not missing, "documented commands with no row in TABLE:\n" + "\n".join(missing)
    stale = sorted(set(TABLE) - set(DOCUMENTED))
    assert not stale, f"rows for commands no doc has any more: {stale}"
    for text, row in TABLE.items():
        assert not (BENCHMARK_SCRIPT.match(text) and not isinstance(row, Benchmark)), text


def _has_row(text: str) -> bool:
    try:
        row_of(text)
    except KeyError:
        return False
    return True


def test_every_block_without_commands_is_known():
    blocks = {" ".join(b.first_line.split()): b.where for b in read_docs()[1]}
    assert set(blocks) == set(TEXT_BLOCKS), (
        "a code block that is not a command (add it to TEXT_BLOCKS if it is none), "
        f"or a listed one that is gone: {sorted(set(blocks) ^ set(TEXT_BLOCKS))}"
    )


def test_the_extractor_reads_shell_as_a_shell_does():
    from .doc_commands import block_commands

    lines = [
        "# a comment",
        "python -m x.run --a=1 \\",
        "    'b=[c,d]'   # trailing comment",
        "for s in one two; do",
        "    run --x=$s --y=${s}_z",
        "done",
        "echo '# kept' # dropped",
    ]
    assert [c.text for c in block_commands("doc.md", 10, lines)] == [
        "python -m x.run --a=1 'b=[c,d]'",
        "run --x=one --y=one_z",
        "run --x=two --y=two_z",
        "echo '# kept'",
    ]
    assert block_commands("doc.md", 10, lines)[0].where == "doc.md:11"


@pytest.mark.parametrize("text", sorted(DOCUMENTED))
def test_documented_paths_and_config_names_exist(text):
    for path in REPO_PATH.findall(text):
        assert (REPO / path).exists(), f"{DOCUMENTED[text][0]}: {path} does not exist"
    for name in re.findall(r"--config-name[= ](\S+)", text):
        assert name in config_names() or name in UPSTREAM_CONFIGS, (DOCUMENTED[text][0], name)


# ---- the rows ----------------------------------------------------------------------------


def _rows(kind: type) -> List[str]:
    return sorted(t for t in DOCUMENTED if _has_row(t) and isinstance(row_of(t), kind))


@pytest.mark.parametrize("text", _rows(NotRun))
def test_a_command_not_run_says_why_and_the_fact_holds(text, tmp_path, monkeypatch):
    row = row_of(text)
    assert isinstance(row, NotRun) and row.reason
    if row.check is not None:
        monkeypatch.chdir(tmp_path)  # an empty folder: no data/ of anyone's
        row.check(text)


@pytest.mark.parametrize("text", _rows(AlsoRunBy))
def test_a_command_tested_elsewhere_is_tested_there(text):
    row = row_of(text)
    assert isinstance(row, AlsoRunBy) and row.differs
    path, name = row.test.split("::")
    assert f"def {name}(" in (REPO / path).read_text(), row.test


@pytest.mark.parametrize("text", _rows(SameAs))
def test_a_command_spelled_twice_runs_once(text):
    row = row_of(text)
    assert isinstance(row, SameAs) and isinstance(TABLE[row.command], Run)
    assert row.command.replace(".venv/bin/python ", "python ", 1) == text


def test_documented_benchmark_arguments_parse():
    commands = [shlex.split(t) for t in _rows(Benchmark)]
    argvs = [[w for w in c if not re.match(r"^\w+=", w)][1:] for c in commands]
    script = Path(__file__).with_name("parse_benchmark_args.py")
    done = subprocess.run(
        [sys.executable, str(script), json.dumps(argvs)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(REPO),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(ln) for ln in done.stdout.splitlines() if ln.startswith("{")]
    assert [r["argv"] for r in results] == argvs
    errors = [f"{r['argv']}: {r['error'].splitlines()[-1]}" for r in results if r["error"]]
    assert not errors, errors


def _run_params():
    params = []
    for text in _rows(Run):
        row = row_of(text)
        assert isinstance(row, Run)
        marks = [pytest.mark.slow] + ([pytest.mark.sim] if row.sim else [])
        short = text.replace(".venv/bin/", "").replace("python -m ", "")
        short = short.replace("habitat_baselines.", "hb.").replace("--config-name=", "")
        params.append(pytest.param(text, marks=marks, id=re.sub(r"[^\w/=.+-]+", "_", short)))
    return params


@pytest.mark.parametrize("text", _run_params())
def test_documented_command_runs_as_written(text, user_folders, request, tmp_path):
    row = row_of(text)
    assert isinstance(row, Run)
    for fixture in row.needs:
        request.getfixturevalue(fixture)
    folder = user_folders.get(row.folder) if row.folder else UserFolder(lay_out(tmp_path))
    if row.prepare is not None:
        row.prepare(folder.path, request)
    for before, budget in row.after:
        ran = folder.run(before, budget, sim=row.sim)
        assert ran.returncode == 0, ran.tail()
    budget = row.budget(folder.path) if callable(row.budget) else row.budget
    ran = folder.run(text, budget, sim=row.sim, cwd=REPO if row.in_checkout else None)
    assert ran.returncode == 0, ran.tail()
    row.check(ran, folder.path)
