"""What a resumed run and an evaluated checkpoint take from the command line.

The stored config wins (upstream's rule), but the budget of a resumed run and
the settings of an evaluation are the command's, and every other value of the
command that is not used is named in one warning.
"""

import subprocess
import sys

import pytest
from habitat import logger

from habitat_ver.common.checkpoint import ResumeStateFiles, load_checkpoint_file
from habitat_ver.config.compose import get_config
from habitat_ver.config.errors import ConfigError
from habitat_ver.run import execute_exp
from habitat_ver.trainers import base

from .conftest import run_overrides, tensorboard_scalars

NUM_STEPS, NUM_ENVS = 16, 2  # run_overrides' rollouts
BUDGET_STEPS = NUM_STEPS * NUM_ENVS * 2  # two updates


@pytest.fixture
def logged(monkeypatch):
    """The warnings and infos habitat's logger got, in order."""
    lines = {"warning": [], "info": []}
    for level, got in lines.items():
        monkeypatch.setattr(logger, level, lambda msg, *a, got=got, **k: got.append(msg))
    return lines


def _steps_run(out_dir, total_num_steps, *overrides):
    """``run_overrides`` with a step budget instead of an update count."""
    return run_overrides(out_dir) + [
        "habitat_baselines.num_updates=-1",
        f"habitat_baselines.total_num_steps={total_num_steps}",
        *overrides,
    ]


def test_a_finished_ver_run_goes_on_to_a_raised_step_budget(out_dir, logged):
    # The case: a trial run, then the same command with a larger
    # total_num_steps "finished" at once (the stored budget won, silently).
    first = execute_exp(get_config("gym/ver_cartpole", _steps_run(out_dir, BUDGET_STEPS)), "train")
    assert first.num_steps_done == BUDGET_STEPS
    raised = _steps_run(out_dir, 2 * BUDGET_STEPS, "habitat_baselines.rl.ppo.lr=5e-4")
    logged["warning"].clear()
    trainer = execute_exp(get_config("gym/ver_cartpole", raised), "train")
    assert trainer.num_steps_done == 2 * BUDGET_STEPS
    assert trainer.config.habitat_baselines.total_num_steps == 2 * BUDGET_STEPS
    assert trainer.config.habitat_baselines.rl.ppo.lr == 1e-3  # the stored one
    (warning,) = [w for w in logged["warning"] if "not used" in w]
    assert warning.splitlines() == [
        f"resuming the run in {out_dir}/checkpoints with its stored config "
        "(habitat_baselines.load_resume_state_config=True): 1 value(s) of this command are "
        "not used; only the budget (habitat_baselines.total_num_steps, num_updates) is taken "
        "from the command; to train with other values, start a new run in another "
        "habitat_baselines.checkpoint_folder",
        "  habitat_baselines.rl.ppo.lr: given 0.0005, used 0.001",
    ]
    assert [i for i in logged["info"] if "goes on" in i] == [
        f"habitat_baselines.total_num_steps={2 * BUDGET_STEPS:.1f} (the run's stored value: "
        f"{BUDGET_STEPS:.1f}): training goes on to it"
    ]
    assert not [w for w in logged["warning"] if "ORIGINAL" in w]  # upstream's banner
    # The run's last checkpoint is the raised budget's, marked as its end.
    latest = load_checkpoint_file(str(out_dir / "checkpoints" / "latest.pth"))
    assert latest["extra_state"]["step"] == 2 * BUDGET_STEPS
    assert latest["extra_state"]["percent_done"] == 1.0


def test_a_raised_update_budget_checkpoints_on_the_new_schedule(out_dir):
    two = run_overrides(out_dir, num_updates=2) + ["habitat_baselines.num_checkpoints=2"]
    execute_exp(get_config("gym/ddppo_cartpole", two), "train")
    before = sorted(p.name for p in (out_dir / "checkpoints").glob("ckpt.*.pth"))
    six = run_overrides(out_dir, num_updates=6) + ["habitat_baselines.num_checkpoints=2"]
    trainer = execute_exp(get_config("gym/ddppo_cartpole", six), "train")
    assert trainer.num_updates_done == 6
    assert trainer.num_steps_done == 6 * NUM_STEPS * NUM_ENVS
    resume = ResumeStateFiles(str(out_dir / "checkpoints")).load()
    assert resume["requeue_stats"]["num_updates_done"] == 6
    assert resume["config"]["habitat_baselines"]["num_updates"] == 6
    # The last checkpoint of the first run was at 100% of 2 updates, 33% of
    # 6: without rescaling, a percent schedule never found one due again.
    after = sorted(p.name for p in (out_dir / "checkpoints").glob("ckpt.*.pth"))
    assert len(after) == len(before) + 2, (before, after)


def test_the_same_command_again_warns_of_nothing_and_says_the_run_is_finished(out_dir, logged):
    config = get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=1))
    execute_exp(config, "train")
    logged["warning"].clear()
    again = execute_exp(config, "train")
    assert again.num_updates_done == 1
    assert logged["warning"] == []
    assert (
        f"the run in {out_dir}/checkpoints is finished (1 of habitat_baselines.num_updates=1): "
        "nothing to train; raise habitat_baselines.num_updates to train on"
    ) in logged["info"]


def test_load_resume_state_config_false_beside_a_run_is_refused_before_any_env(
    out_dir, monkeypatch
):
    config = get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=1))
    execute_exp(config, "train")
    started = []
    monkeypatch.setattr(base.HabitatVerTrainer, "_init_envs", lambda *a, **k: started.append(1))
    fresh = run_overrides(out_dir, 1) + ["habitat_baselines.load_resume_state_config=False"]
    with pytest.raises(
        ConfigError,
        match=r"^habitat_baselines\.load_resume_state_config=False is not allowed beside the "
        rf"run in habitat_baselines\.checkpoint_folder='{out_dir}/checkpoints'.*"
        r"Resume it without that setting.*set checkpoint_folder",
    ):
        execute_exp(get_config("gym/ddppo_cartpole", fresh), "train")
    assert started == []


@pytest.mark.sim  # habitat_baselines.run imports habitat before our sim-free mode
def test_load_resume_state_config_false_under_habitat_baselines_run_is_one_line(tmp_path):
    out_dir = tmp_path / "run"
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(out_dir, 1)), "train")
    overrides = run_overrides(out_dir, 1) + ["habitat_baselines.load_resume_state_config=False"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "habitat_baselines.run",
            "--config-name=gym/ddppo_cartpole",
            *overrides,
            f"hydra.run.dir={tmp_path}/hydra",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    # It was upstream's FileExistsError, an 18-line traceback.
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    lines = [
        ln for ln in done.stderr.splitlines() if ln.startswith("habitat_baselines.run: error:")
    ]
    assert len(lines) == 1 and "load_resume_state_config=False is not allowed" in lines[0]


def test_evaluation_names_what_it_takes_from_the_checkpoint_and_honours_the_rest(out_dir, logged):
    trained = run_overrides(out_dir, 1) + ["habitat_baselines.rl.ppo.hidden_size=32"]
    execute_exp(get_config("gym/ddppo_cartpole", trained), "train")
    latest = out_dir / "checkpoints" / "latest.pth"
    evaluation = run_overrides(out_dir, 1) + [
        f"habitat_baselines.eval_ckpt_path_dir={latest}",
        "habitat_baselines.evaluate=True",
        "habitat_baselines.test_episode_count=3",
        "habitat_baselines.num_environments=1",
    ]
    logged["warning"].clear()
    trainer = execute_exp(get_config("gym/ddppo_cartpole", evaluation), "eval")
    # Upstream's banner said the new configuration was IGNORED, although its
    # evaluation settings were not.
    assert not [w for w in logged["warning"] if "ORIGINAL" in w or "IGNORED" in w]
    (warning,) = [w for w in logged["warning"] if "not used" in w]
    assert warning.splitlines() == [
        f"evaluating {latest} with its stored config "
        "(habitat_baselines.load_resume_state_config=True): 1 value(s) of this command are "
        "not used; the evaluation's own settings (test_episode_count, eval.*, "
        "num_environments) are the command's; to build the env and policy from the command "
        "too, set habitat_baselines.load_resume_state_config=False",
        "  habitat_baselines.rl.ppo.hidden_size: given 64, used 32",
    ]
    assert trainer.agent.actor_critic.recurrent_hidden_size == 32
    assert trainer.envs is not None and trainer.config.habitat_baselines.num_environments == 1
    (reward,) = tensorboard_scalars(out_dir / "tb")["eval_reward/average_reward"]
    assert reward > 0
