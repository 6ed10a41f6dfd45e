"""`python -m habitat_ver.run`: upstream's command line, one-line errors."""

import subprocess
import sys

import pytest

from habitat_ver.config.validate import ConfigError
from habitat_ver.run import UnknownTrainerError, get_trainer_class


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "habitat_ver.run", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _assert_one_line_error(done: subprocess.CompletedProcess, *fragments: str) -> None:
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "AttributeError" not in done.stderr and "StandIn" not in done.stderr
    prefix = "habitat_ver.run: error:"
    error_lines = [ln for ln in done.stderr.splitlines() if ln.startswith(prefix)]
    assert len(error_lines) == 1, done.stderr
    for fragment in fragments:
        assert fragment in error_lines[0]


def test_config_needing_the_simulator_fails_naming_habitat_sim():
    done = _run("--config-name=rearrange/ddppo_pick")
    _assert_one_line_error(done, "habitat-sim", "conda install habitat-sim", "RearrangeSim-v0")


def test_unknown_trainer_lists_the_registered_ones():
    done = _run("--config-name=gym/ddppo_cartpole", "habitat_baselines.trainer_name=nope")
    _assert_one_line_error(done, "trainer_name='nope'", "'ddppo'", "'upstream_ver'")
    with pytest.raises(UnknownTrainerError, match="registered trainers are"):
        get_trainer_class("nope")


def test_non_positive_num_environments_is_refused():
    done = _run("--config-name=gym/ddppo_cartpole", "habitat_baselines.num_environments=0")
    _assert_one_line_error(done, "habitat_baselines.num_environments=0", "positive integer")


def test_unknown_gym_id_is_refused_listing_ours():
    done = _run("--config-name=gym/ddppo_cartpole", "habitat.env_task_gym_id=NoSuchEnv-v9")
    _assert_one_line_error(done, "NoSuchEnv-v9", "habitat_ver/DoomMyWayHome-v0")


def test_missing_checkpoint_for_evaluation_is_refused(tmp_path):
    done = _run(
        "--config-name=gym/ddppo_cartpole",
        "habitat_baselines.evaluate=True",
        f"habitat_baselines.eval_ckpt_path_dir={tmp_path}/missing.pth",
    )
    _assert_one_line_error(done, "missing.pth", "no such checkpoint")


def test_a_resume_state_is_not_evaluated_as_a_checkpoint(tmp_path):
    resume_state = tmp_path / "resume-state.pth"
    resume_state.write_bytes(b"")
    done = _run(
        "--config-name=gym/ddppo_cartpole",
        "habitat_baselines.evaluate=True",
        f"habitat_baselines.eval_ckpt_path_dir={resume_state}",
    )
    # It used to reach upstream's evaluator: KeyError: 'extra_state'.
    _assert_one_line_error(done, "resume-state.pth", "not a checkpoint", "latest.pth")


def test_a_fresh_start_refused_beside_an_earlier_run_is_one_line(tmp_path):
    run = [
        "--config-name=gym/ddppo_cartpole",
        "habitat_baselines.num_updates=1",
        "habitat_baselines.total_num_steps=-1",
        f"habitat_baselines.checkpoint_folder={tmp_path}/ck",
        f"habitat_baselines.tensorboard_dir={tmp_path}/tb",
        f"habitat_baselines.log_file={tmp_path}/train.log",
    ]
    assert _run(*run).returncode == 0
    # Upstream's FileExistsError used to leave as a traceback.
    done = _run(*run, "habitat_baselines.load_resume_state_config=False")
    _assert_one_line_error(done, "load_resume_state_config=False", f"{tmp_path}/ck")


def test_config_name_is_required():
    done = _run()
    _assert_one_line_error(done, "--config-name")


def test_unknown_key_is_reported_by_name():
    done = _run("--config-name=gym/ddppo_cartpole", "habitat_baselines.no_such_key=1")
    _assert_one_line_error(
        done,
        "Could not override 'habitat_baselines.no_such_key'",
        "+habitat_baselines.no_such_key=1",
    )


@pytest.mark.parametrize(
    "config, override, fragments",
    [
        # Hydra's own error.
        (
            "ddppo",
            "habitat_baselines.rl.ppo.lr=[1,",
            ["cannot parse the override 'habitat_baselines.rl.ppo.lr=[1,'"],
        ),
        # Added with Hydra's `+`, refused by validate().
        (
            "ddppo",
            "+habitat_baselines.rl.ppo.lrr=1",
            ["habitat_baselines.rl.ppo.lrr=1 is not allowed", "did you mean 'lr'?"],
        ),
        # Was a ValueError traceback from the VER minibatch split after env start.
        (
            "ver",
            "habitat_baselines.rl.ppo.num_mini_batch=100000",
            ["num_mini_batch=100000 is not allowed", "a divisor of the 256 steps"],
        ),
    ],
    ids=["malformed", "plus-typo", "ver-minibatches"],
)
def test_bad_override_is_one_line_and_exit_2(tmp_path, config, override, fragments):
    done = _run(
        f"--config-name=gym/{config}_cartpole",
        override,
        f"habitat_baselines.checkpoint_folder={tmp_path}/ck",
        f"habitat_baselines.tensorboard_dir={tmp_path}/tb",
        f"habitat_baselines.log_file={tmp_path}/train.log",
    )
    _assert_one_line_error(done, *fragments)


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_preemption_policy_the_trainer_lacks_is_refused_by_name(tmp_path):
    done = _run(
        "--config-name=gym/ddppo_cartpole",
        "habitat_baselines.distrib_preemption.policy=ver",
        f"habitat_baselines.checkpoint_folder={tmp_path}/ck",
        f"habitat_baselines.tensorboard_dir={tmp_path}/tb",
        f"habitat_baselines.log_file={tmp_path}/train.log",
    )
    _assert_one_line_error(done, "distrib_preemption.policy='ver'", "'ddppo'", "'none'")


@pytest.mark.sim  # habitat_baselines.run imports habitat before our sim-free mode
def test_a_config_error_under_habitat_baselines_run_is_one_line_too(tmp_path):
    # Hydra printed the traceback of any exception ("Error executing job").
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "habitat_baselines.run",
            "--config-name=gym/appo_cartpole",
            "habitat_baselines.num_environments=2",
            f"hydra.run.dir={tmp_path}/hydra",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    lines = [
        ln for ln in done.stderr.splitlines() if ln.startswith("habitat_baselines.run: error:")
    ]
    assert len(lines) == 1 and "rl.appo.num_env_groups=2 is not allowed" in lines[0]


@pytest.mark.sim  # habitat_baselines.run imports habitat before our sim-free mode
def test_habitat_baselines_run_writes_only_in_the_runs_folder(tmp_path):
    # Hydra wrote its log and .hydra/ into outputs/<date>/<time>/ of the folder
    # the command ran in; they go into the run's folder with its other files.
    done = subprocess.run(
        [sys.executable, "-m", "habitat_baselines.run", "--config-name=gym/ver_cartpole"]
        + ["habitat_baselines.num_environments=2", "habitat_baselines.total_num_steps=256"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = tmp_path / "outputs" / "gym" / "ver_cartpole"
    written = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_dir()}
    assert {p for p in written if not p.startswith("outputs/gym/ver_cartpole")} == {
        "outputs",
        "outputs/gym",
    }
    assert (run / "hydra.log").is_file() and (run / ".hydra" / "config.yaml").is_file()
    assert (run / "train.log").is_file() and (run / "config.yaml").is_file()


def test_a_misspelled_config_name_suggests_the_nearest():
    # Hydra printed its config search path (several lines) and no suggestion.
    done = _run("--config-name=rearrange/ver_pik")
    _assert_one_line_error(
        done,
        "--config-name=rearrange/ver_pik: no such config; did you mean rearrange/ver_pick, ",
    )


@pytest.mark.sim  # habitat_baselines.run imports habitat before our sim-free mode
def test_a_misspelled_config_name_under_habitat_baselines_run_suggests_the_nearest(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "habitat_baselines.run", "--config-name=rearrange/ver_pik"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    # Our line comes before Hydra's own error (its search path).
    hint = "habitat_ver: --config-name=rearrange/ver_pik: no such config; did you mean "
    lines = done.stderr.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith(hint))
    assert lines[first + 1].startswith("Cannot find primary config 'rearrange/ver_pik'")
