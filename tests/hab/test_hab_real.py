"""HAB on the real simulator, on our generated apartment and episodes.

One session-wide data folder made by the README's
``python -m habitat_ver.tools.make_hab_dataset --assets ../shared/habitat-data``
(fixture ``hab_run_dir``, tests/user_folders.py, also used by the test of the
docs' commands), then the shipped configs run from the folder holding it, with
the one override ``hab_data=generated``, as a user runs them (docs/HAB.md).
"""

import gzip
import json
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from habitat_ver.common import noise_filter
from habitat_ver.config import shipped_skills
from habitat_ver.system.stop_signals import sigint_as_in_a_terminal
from habitat_ver.tools import hab_scene
from habitat_ver.tools import make_hab_dataset as tool
from habitat_ver.trainers.eval_header import counted_line
from tests.sim.conftest import run_real
from tests.user_folders import HAB_ARRANGEMENTS as ARRANGEMENTS
from tests.user_folders import HAB_ASSETS as ASSETS
from tests.user_folders import HAB_TRAIN as TRAIN
from tests.user_folders import HAB_VAL as VAL
from tests.user_folders import HAB_DATA_BUDGET, ORACLE_RUNS, user_env

pytestmark = pytest.mark.sim

# Every shipped skill config, a couple of updates each.
SKILL_CONFIGS = [
    "rearrange/ver_place",
    "rearrange/ver_nav_to_obj",
    "rearrange/ver_open_fridge",
    "rearrange/ver_close_fridge",
    "rearrange/ver_open_cab",
    "rearrange/ver_close_cab",
    "rearrange/ver_pick_nonav",
    "rearrange/ver_place_nonav",
    "rearrange/ddppo_pick",
]
T = 4
SHORT_RUN = [
    "habitat_baselines.num_environments=1",
    f"habitat_baselines.rl.ppo.num_steps={T}",
    "habitat_baselines.rl.ppo.num_mini_batch=1",
    "habitat_baselines.num_updates=2",
    "habitat_baselines.total_num_steps=-1",
    "habitat_baselines.num_checkpoints=1",
    # One learner thread: a 2-thread update on busy CI cores is the slow case.
    "habitat_baselines.learner.num_threads=1",
]


def _episodes(run_dir, split, name):
    path = run_dir / "data" / tool.EPISODES_SUBDIR / split / f"{name}.json.gz"
    return json.loads(gzip.decompress(path.read_bytes()))["episodes"]


def test_the_generated_data_is_complete_and_consistent(hab_run_dir):
    data = hab_run_dir / "data"
    scene = data / "hab_ver"
    splits = tool.arrangements(*ARRANGEMENTS)
    scenes = {split: [hab_scene.scene_name(a) for a in chosen] for split, chosen in splits.items()}
    built = scenes["train"] + scenes["val"]
    assert not set(scenes["train"]) & set(scenes["val"])
    # The scene dataset config lists every scene built, and only those.
    dataset = json.loads((scene / hab_scene.DATASET_CONFIG).read_text())
    assert sorted(dataset["navmesh_instances"]) == sorted(built)
    assert sorted(p.name for p in (scene / "scenes").iterdir()) == sorted(
        f"{name}.scene_instance.json" for name in built
    )
    for name in built:
        assert (scene / "navmeshes" / f"{name}.navmesh").stat().st_size > 0
        instance = json.loads((scene / "scenes" / f"{name}.scene_instance.json").read_text())
        assert {"fridge", "kitchen_counter"} <= set(
            hab_scene.names(instance["articulated_object_instances"])
        )
        assert "frl_apartment_table_01" in hab_scene.names(instance["object_instances"])
    for spec in tool.DATASETS:
        for split, count in (("train", TRAIN), ("val", VAL)):
            episodes = _episodes(hab_run_dir, split, spec.name)
            assert len(episodes) == count, (spec.name, split)
            # Every episode is on an arrangement of its split, every one of them used.
            assert {e["scene_id"] for e in episodes} == set(scenes[split]), (spec.name, split)
            for episode in episodes:
                assert episode["scene_dataset_config"].endswith(hab_scene.DATASET_CONFIG)
                names = [obj[0].split(".object_config.json")[0] for obj in episode["rigid_objs"]]
                assert set(names) <= set(tool.OBJECTS)
                # Every object the task names is one the episode adds.
                assert tool.stale_objects(_Episode(episode)) == []
    tidy = _episodes(hab_run_dir, "val", "tidy_house_10k_1k")
    assert all(len(e["targets"]) == 5 for e in tidy)
    groceries = _episodes(hab_run_dir, "val", "prepare_groceries_10k_1k")
    assert all(len(e["targets"]) == 3 for e in groceries)


class _Episode:
    def __init__(self, data):
        self.rigid_objs = data["rigid_objs"]
        self.name_to_receptacle = data["name_to_receptacle"]


def _train_command_args(out):
    return [
        "hab_data=generated",
        *SHORT_RUN,
        f"habitat_baselines.checkpoint_folder={out}/ckpt",
        f"habitat_baselines.tensorboard_dir={out}/tb",
        f"habitat_baselines.log_file={out}/train.log",
    ]


def test_ver_pick_trains_through_habitat_baselines_run(hab_run_dir):
    out = hab_run_dir / "outputs" / "ver_pick"
    run = run_real(
        [
            "-m",
            "habitat_baselines.run",
            "--config-name=rearrange/ver_pick",
            "hab_profile=paper",
            *_train_command_args(out),
        ],
        cwd=hab_run_dir,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    _assert_one_screen(run.stdout + run.stderr, out.relative_to(hab_run_dir))
    assert (out / "config.yaml").is_file()
    checkpoint = torch.load(out / "ckpt" / "latest.pth", map_location="cpu", weights_only=False)
    assert checkpoint["config"]["habitat_baselines"]["rl"]["policy"]["main_agent"]["name"] == (
        "VERPolicy"
    )
    # The paper's ConvNeXt-style encoder and 2-layer LSTM of 512 units.
    weights = checkpoint["state_dict"]
    assert weights["net.visual_encoder.backbone.stem.0.weight"].shape[2:] == (4, 4)  # patchify
    assert weights["net.state_encoder.rnn.rnn.weight_hh_l1"].shape == (4 * 512, 512)
    resume = torch.load(out / "ckpt" / "resume-state.pth", weights_only=False)["requeue_stats"]
    assert resume["num_updates_done"] == 2 and resume["num_steps_done"] == 2 * T


# What habitat-baselines prints while it imports habitat-lab, before our plugin
# (and the noise filter) is loaded: gym's banner and Magnum's plugin notices.
BEFORE_OUR_PLUGIN = 3 + 6


def _assert_one_screen(console, out):
    """The console of a short ver_pick run (1 env) on the real simulator:
    no config dump, no third-party noise but one summary line, the first
    update's lines although log_interval is 10, nothing glued to the bar.

    Args:
        out: the run's folder, relative to the folder the run started in.
    """
    lines = console.replace("\r", "\n").splitlines()
    shown = [line for line in lines if line.strip() and "%|" not in line]
    assert len(shown) <= 30, "\n".join(shown)  # the config dump alone was ~450 lines
    assert len([ln for ln in lines if "PluginManager" in ln or "Gymnasium" in ln]) <= (
        BEFORE_OUR_PLUGIN
    )
    assert [ln for ln in lines if "registration is aborted" in ln] == [
        next(n.summary for n in noise_filter.NOISE if n.summary)
    ]
    assert "config: habitat:" not in console and "Renderer: llvmpipe" not in console
    assert "initializing sim" not in console and "semantic annotations" not in console
    assert console.count(f"habitat_ver: the run's config is in {out}/config.yaml\n") == 1
    # SHORT_RUN: 2 updates, the config's log_interval (10).
    assert len(re.findall(r"\d update: 1\tsteps: ", console)) == 1
    # A log line never starts on the progress bar's line.
    for line in console.split("\n"):
        visible = line.rsplit("\r", 1)[-1]
        assert "%|" not in visible or "habitat_ver" not in visible, line


def test_make_hab_dataset_says_what_it_made(hab_run_dir):
    # The log, one line per scene, one per episode file and split, the total;
    # 8,832 lines before (habitat-lab's generator log, habitat-sim's errors).
    lines = (hab_run_dir / "make_hab_dataset.stdout").read_text().splitlines()
    assert (hab_run_dir / "make_hab_dataset.stderr").read_text() == ""
    log = f"data/{tool.LOG_FILE}"
    assert lines[0] == f"{tool.COMMAND}: habitat-lab's and habitat-sim's output goes to {log}"
    splits = tool.arrangements(*ARRANGEMENTS)
    scenes = [
        f"scene {hab_scene.scene_name(a)} ({split}): fridge, kitchen_counter"
        for split, chosen in splits.items()
        for a in chosen
    ]
    assert [line[: len(s)] for line, s in zip(lines[1:], scenes)] == scenes
    for line in lines[1 : 1 + len(scenes)]:
        assert re.search(r", [0-9.]+ m\^2 of indoor floor$", line), line
    files = [
        f"{s.name} {split}: {n} of {n} episodes on {len(splits[split])} arrangement(s) ("
        for s in tool.DATASETS
        for split, n in (("train", TRAIN), ("val", VAL))
    ]
    after = lines[1 + len(scenes) : -1]
    assert [line[: len(f)] for line, f in zip(after, files)] == files
    written = 2 * len(tool.DATASETS)  # a new folder: every file is made now
    assert lines[-1] == (
        f"{written} episode files written, {written} in all under data/{tool.EPISODES_SUBDIR}"
    )
    assert len(lines) == 2 + len(scenes) + 2 * len(tool.DATASETS)
    text = (hab_run_dir / log).read_text()
    assert "registration is aborted" in text and "Successfully sampled" in text


def test_make_hab_dataset_interrupted_then_run_again_goes_on_and_makes_the_same_files(
    hab_run_dir, user_folders
):
    # The README's command with CI's budget, in a new folder; Ctrl-C once its
    # first episode file is made, then the same command again.
    folder = user_folders.get("hab-interrupted").path
    command = [sys.executable, "-m", "habitat_ver.tools.make_hab_dataset"]
    command += ["--assets", "../shared/habitat-data", *HAB_DATA_BUDGET]
    progress = folder / tool.progress_dir("data")
    first = subprocess.Popen(
        command,
        cwd=folder,
        env=user_env(sim=True),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as in a terminal, also when the tests run as a background job
        # (which starts them with SIGINT ignored)
        preexec_fn=sigint_as_in_a_terminal,
    )
    deadline = time.monotonic() + 900
    while not list(progress.glob("*.json.gz")) and first.poll() is None:
        assert time.monotonic() < deadline, "no episode file made in 15 minutes"
        time.sleep(0.5)
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 130, err[-3000:]
    assert err.count("\n") == 1 and "interrupted;" in err and "run the same command" in err, err
    assert "Traceback" not in err
    kept = sorted(p.name.split("-")[0] for p in progress.glob("*.json.gz"))
    assert kept and not (folder / "data" / tool.EPISODES_SUBDIR).exists()

    again = subprocess.run(
        command,
        cwd=folder,
        env=user_env(sim=True),
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    taken = [
        line.split(":")[0]
        for line in again.stdout.splitlines()
        if "made by a run stopped before" in line
    ]
    assert sorted(taken) == kept, again.stdout
    assert not progress.exists()
    # Byte for byte what the uninterrupted run (the fixture's) made.
    made = sorted((folder / "data" / tool.EPISODES_SUBDIR).glob("*/*.json.gz"))
    reference = sorted((hab_run_dir / "data" / tool.EPISODES_SUBDIR).glob("*/*.json.gz"))
    assert [p.relative_to(folder) for p in made] == [p.relative_to(hab_run_dir) for p in reference]
    for mine, theirs in zip(made, reference):
        assert gzip.decompress(mine.read_bytes()) == gzip.decompress(theirs.read_bytes()), mine.name


def test_the_shipped_pick_picks_on_an_unseen_arrangement(hab_run_dir, tmp_path):
    # The CPU profile's pick as shipped, on CI's val episodes (an arrangement
    # it never trained on). Seeded: each run takes the same actions.
    shipped = shipped_skills.shipped_checkpoint("pick")
    log = tmp_path / "eval.log"
    done = run_real(
        [
            *("-m", "habitat_baselines.run", "--config-name=rearrange/ver_pick_nonav"),
            *("hab_data=generated", "hab_profile=cpu", "habitat_baselines.evaluate=True"),
            f"habitat_baselines.eval_ckpt_path_dir={shipped}",
            f"habitat_baselines.test_episode_count={VAL}",
            f"habitat_baselines.log_file={log}",
            f"habitat_baselines.tensorboard_dir={tmp_path / 'tb'}",
            f"habitat_baselines.checkpoint_folder={tmp_path / 'ckpt'}",
            f"habitat_baselines.video_dir={tmp_path / 'video'}",
        ],
        cwd=hab_run_dir,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    text = log.read_text()
    assert counted_line(VAL) in text, text[-3000:]
    success = float(re.search(r"Average episode pick_success: ([0-9.]+)", text).group(1))
    assert success >= 1 / VAL, text[-3000:]  # at least one of the episodes picked


def test_every_skill_config_trains_two_updates(hab_run_dir):
    out = hab_run_dir / "outputs" / "skills"
    run = run_real(
        ["-m", "habitat_ver.tools.run_configs", str(out), "train", *SKILL_CONFIGS]
        + ["--", *SHORT_RUN],
        cwd=hab_run_dir,
        timeout=1800,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    results = [
        json.loads(line[len("RESULT ") :])
        for line in run.stdout.splitlines()
        if line.startswith("RESULT ")
    ]
    assert [r["config"] for r in results] == SKILL_CONFIGS
    for result in results:
        expected = (
            "PointNavResNetPolicy" if result["config"] == "rearrange/ddppo_pick" else "VERPolicy"
        )
        assert result["policy"] == result["checkpoint_policy"] == expected, result
        assert result["num_updates_done"] == 2 and result["num_steps_done"] == 2 * T, result
        assert result["checkpoint_keys"] > 10, result


_STAGE = re.compile(r"Average episode pddl_stage_goals\.(stage_\S+)_success: ([0-9.]+)")


def test_a_scene_without_floor_room_is_refused_in_one_line(tmp_path):
    # A plan of under 1 m^2: no room for the Fetch (0.3 m radius) to stand.
    script = (
        "import sys; from habitat_ver.tools import hab_scene, make_hab_dataset as m; "
        "cells = frozenset({(0, 0), (1, 0), (0, 1), (1, 1), (1, 2)}); "
        "hab_scene.plan_from_navmesh = lambda path: hab_scene.Plan((0.0, 0.0), 0.3, cells); "
        f"sys.exit(m.main(['--assets', {str(ASSETS)!r}, '--out', 'data']))"
    )
    if not (ASSETS / "replica_cad").is_dir():
        pytest.skip(f"no HAB assets at {ASSETS}")
    run = run_real(["-c", script], cwd=tmp_path)
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert run.returncode == 2, run.stderr[-3000:]
    assert len(errors) == 1, errors
    assert re.fullmatch(
        rf"{re.escape(tool.COMMAND)}: error: the scene hab_ver_v3_sc0_staging_00 in "
        r"data/hab_ver has [0-9.]+ m\^2 of "
        r"navigable indoor floor \(at least 10.0 needed\): .*",
        errors[0],
    ), errors
    assert not (tmp_path / "data" / tool.EPISODES_SUBDIR).exists()


# Two episodes of the oracle config (kinematic mode): after each reset, the
# furniture's motion type and motors, and a drawer opened as open_cab's effect
# opens it, after 30 physics steps.
KINEMATIC_FURNITURE_CHECK = """
import json
import habitat_ver  # noqa: F401
from habitat_ver.config.compose import get_config
from habitat_ver.envs.builder import build_env

env = build_env(get_config("hab/set_table_oracle", ["hab_data=generated"]), 0)
sim = env.unwrapped.habitat_env.sim
for _ in range(2):
    env.reset()
    counter = next(a for a in sim.fixed_furniture() if "kitchen_counter" in a.handle)
    joints = list(counter.joint_positions)
    joints[-1] = 0.45
    counter.joint_positions = joints
    for _ in range(30):
        sim.internal_step(-1)
    print("FURNITURE " + json.dumps(dict(
        motion={a.handle: str(a.motion_type) for a in sim.fixed_furniture()},
        motors=sum(len(a.existing_joint_motor_ids) for a in sim.fixed_furniture()),
        drawer=counter.joint_positions[-1],
    )))
env.close()
"""


def test_oracle_furniture_stays_kinematic_after_every_reset(hab_run_dir):
    # habitat-sim's reset gave the furniture back its DYNAMIC motion: an opened
    # drawer was then pushed shut by the kinematic cup inside it (Set Table,
    # docs/HAB.md).
    run = run_real(["-c", KINEMATIC_FURNITURE_CHECK], cwd=hab_run_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    episodes = [
        json.loads(line[len("FURNITURE ") :])
        for line in run.stdout.splitlines()
        if line.startswith("FURNITURE ")
    ]
    assert len(episodes) == 2
    for episode in episodes:
        assert {"fridge", "kitchen_counter"} <= {h.split("_:")[0] for h in episode["motion"]}
        assert set(episode["motion"].values()) == {"MotionType.KINEMATIC"}, episode
        assert episode["motors"] == 0
        assert episode["drawer"] == pytest.approx(0.45, abs=1e-4)


MARKERS_CHECK = """
import json
import numpy as np
from habitat.tasks.rearrange.sub_tasks import articulated_object_sensors as lab
import habitat_ver  # noqa: F401
from habitat_ver.config.compose import get_config
from habitat_ver.envs.builder import build_env

env = build_env(get_config("hab/set_table_nonav", ["hab_data=generated", "hab_profile=cpu"]), 0)
sim = env.unwrapped.habitat_env.sim
names = list(env.unwrapped.habitat_env.task.sensor_suite.sensors["ver_markers"]._names)

class Uses:
    def __init__(self, name):
        self.name = name
    def get_use_marker(self):
        return sim.get_marker(self.name)

rng = np.random.default_rng(0)
for episode in range(2):
    obs = env.reset()
    for step in range(10):
        rows = obs["ver_markers"].reshape(-1, 4)
        for i, name in enumerate(names):
            task = Uses(name)
            rel = lab.MarkerRelPosSensor(sim=sim, config={}, task=task).get_observation(None, None)
            js = lab.ArtJointSensorNoVel(sim=sim, config={}, task=task).get_observation(None, None)
            row = dict(name=name, row=rows[i].tolist(), rel=rel.tolist(), js=js.tolist())
            print("ROW " + json.dumps(row))
        if step == 4:
            sim.get_marker(names[episode]).set_targ_js(0.3)
        action = np.zeros(env.action_space.shape, dtype=np.float32)
        action[:7] = rng.uniform(-1, 1, 7)  # the arm's joints; no stop, no grasp
        obs, _, done, _ = env.step(action)
        if done:
            break
env.close()
"""


def test_the_markers_sensor_rows_are_habitat_labs_marker_sensors_for_each_marker(hab_run_dir):
    # Set Table in the CPU profile, the arm moved at random; after 5 steps one
    # drawer (episode 0) or another (episode 1) is set 0.3 open.  Each row must
    # be what habitat-lab's MarkerRelPosSensor and ArtJointSensorNoVel report
    # when their task names that marker (as the skill's own task does).
    run = run_real(["-c", MARKERS_CHECK], cwd=hab_run_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [
        json.loads(line[len("ROW ") :])
        for line in run.stdout.splitlines()
        if line.startswith("ROW ")
    ]
    names = [
        "cab_push_point_4",
        "cab_push_point_5",
        "cab_push_point_6",
        "cab_push_point_7",
        "fridge_push_point",
    ]
    assert len(rows) == 2 * 10 * len(names)
    assert [r["name"] for r in rows[: len(names)]] == names
    for r in rows:
        assert r["row"][:3] == pytest.approx(r["rel"], abs=1e-6) and r["row"][3] == pytest.approx(
            r["js"][0], abs=1e-6
        )
    opened = {(i // (10 * len(names)), r["name"]) for i, r in enumerate(rows) if r["row"][3] > 0.25}
    assert opened == {(0, "cab_push_point_4"), (1, "cab_push_point_5")}
    # The arm moved: the handles' positions in the end effector's frame changed.
    first = [r["row"][:3] for r in rows if r["name"] == "fridge_push_point"]
    assert max(np.abs(np.subtract(first[0], p)).max() for p in first[:10]) > 0.01


def test_each_scenario_evaluates_with_oracle_skills_and_reports_its_stages(
    hab_run_dir, hab_oracle_logs
):
    # The configs as shipped (4 envs) on the generated data (one scene): one
    # env is built and everything is sized for it (the planner was sized for
    # 4: "IndexError: index 1 is out of bounds" in upstream's fixed_policy.py;
    # tests/trainers/test_eval_env_count.py has the one-env-per-scene line).
    # One episode of each, run by the fixture (the docs' stage report reads
    # the same logs).
    out = hab_run_dir / "outputs" / "oracle"
    logs = hab_oracle_logs
    assert list(logs) == ORACLE_RUNS
    for log in logs.values():
        # 4 envs asked for, one episode: one env runs it, and the log says so
        # before and after the averages.
        text = log.read_text()
        assert "on 1 episode(s)" in text and counted_line(1) in text, text[-3000:]
    report = run_real(
        ["-m", "habitat_ver.tools.hab_stage_report", "--out", str(out / "report")]
        + [arg for name, log in logs.items() for arg in ("--run", f"{name}={log}")],
        cwd=hab_run_dir,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    table = (out / "report" / "stage_success.md").read_text()
    assert (out / "report" / "stage_success.png").stat().st_size > 1000
    for name, log in logs.items():
        stages = dict(_STAGE.findall(log.read_text()))
        success = re.findall(r"Average episode pddl_success: ([0-9.]+)", log.read_text())
        assert stages and success, name
        scenario = name[len("hab/") : -len("_oracle")]
        row = next(line for line in table.splitlines() if line.startswith(f"| {scenario} |"))
        # The report's full-task column is the log's pddl_success, in percent.
        assert row.split("|")[-3].strip() == f"{100 * float(success[-1]):.1f}", (row, success)
        # Oracle navigation and the actions' effects solve the episode: every
        # stage and the whole task (docs/HAB.md: 10 val episodes each).
        assert float(success[-1]) == 1.0, (name, stages)
        assert all(float(value) == 1.0 for value in stages.values()), (name, stages)


def test_skill_checkpoints_are_checked_before_any_env_starts(
    hab_run_dir, skill_checkpoints, tmp_path
):
    # As a user beside the data who trained no skill yet (a folder of its own:
    # the session's HAB folder holds the docs' ver_pick run, whose checkpoint
    # is the default pick path): the defaults name three checkpoints not
    # trained yet; then a pick checkpoint given as place and a text file.
    untrained = tmp_path / "untrained"
    untrained.mkdir()
    (untrained / "data").symlink_to(hab_run_dir / "data", target_is_directory=True)
    run = run_real(
        [
            "-m",
            "habitat_baselines.run",
            "--config-name=hab/tidy_house",
            "hab_data=generated",
            "hab_profile=paper",
        ],
        cwd=untrained,
    )
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert run.returncode == 2, run.stderr[-3000:]
    assert len(errors) == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert errors[0].startswith(
        "habitat_baselines.run: error: 3 skill checkpoints cannot be used: "
        "hab_skill_checkpoints.pick='outputs/rearrange/ver_pick/checkpoints/latest.pth': "
        "no such file; hab_skill_checkpoints.place="
    ), errors
    assert "hab_skill_checkpoints.nav_to_obj='outputs/rearrange/ver_nav_to_obj/" in errors[0]
    assert "scenes per environment" not in run.stderr  # no env was built

    text = hab_run_dir / "nav.txt"
    text.write_text("not a checkpoint\n")
    pick = skill_checkpoints["pick"]
    run = run_real(
        [
            "-m",
            "habitat_baselines.run",
            "--config-name=hab/tidy_house",
            "hab_data=generated",
            "hab_profile=paper",
            f"hab_skill_checkpoints.pick={pick}",
            f"hab_skill_checkpoints.place={pick}",
            f"hab_skill_checkpoints.nav_to_obj={text}",
        ],
        cwd=hab_run_dir,
    )
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert run.returncode == 2 and len(errors) == 1, run.stderr[-3000:]
    assert (
        f"hab_skill_checkpoints.place='{pick}': the file at {pick} is a checkpoint of skill "
        "`pick`, not `place`" in errors[0]
    ), errors
    assert f"hab_skill_checkpoints.nav_to_obj='{text}': not a readable checkpoint (" in errors[0]
    assert "hab_skill_checkpoints.pick=" not in errors[0].split("; train each")[0]
