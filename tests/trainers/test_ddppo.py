"""The `ddppo` trainer on CartPole: counters, files, resume, evaluation."""

import glob
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from habitat import VectorEnv
from habitat_baselines.rl.ddppo.ddp_utils import EXIT

from habitat_ver.common.checkpoint import (
    CheckpointsWithoutResumeStateError,
    ResumeStateFiles,
    UnusableResumeStateError,
    load_checkpoint_file,
    save_checkpoint_file,
)
from habitat_ver.config.compose import get_config
from habitat_ver.config.errors import ConfigError
from habitat_ver.system.stop_signals import STOP_SIGNALS
from habitat_ver.run import execute_exp, get_trainer_class
from habitat_ver.trainers import base
from habitat_ver.trainers.ddppo import DDPPOTrainer

from .conftest import run_overrides, tensorboard_scalars

NUM_STEPS, EPOCHS, MINIBATCHES = 16, 2, 1


def _adam_steps(state: dict) -> int:
    """Adam's per-parameter step counter (equal for every parameter)."""
    steps = {int(s["step"]) for s in state["optim_state"]["state"].values()}
    assert len(steps) == 1
    return steps.pop()


def test_short_run_counts_steps_and_writes_files(out_dir):
    config = get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=3))
    trainer = execute_exp(config, "train")
    assert trainer.num_updates_done == 3
    assert trainer.num_steps_done == 3 * NUM_STEPS * 2  # updates x T x N
    assert trainer.rollout_lengths == [NUM_STEPS] * 3  # one rank: never preempted

    latest = load_checkpoint_file(str(out_dir / "checkpoints" / "latest.pth"))
    assert latest["config"].habitat_baselines.num_environments == 2
    assert latest["extra_state"]["step"] == trainer.num_steps_done
    params = dict(trainer.agent.actor_critic.state_dict())
    for key, value in latest["state_dict"].items():
        assert torch.equal(value, params[key]), key

    resume = ResumeStateFiles(str(out_dir / "checkpoints")).load()
    assert resume["requeue_stats"]["num_updates_done"] == 3
    assert _adam_steps(resume) == 3 * EPOCHS * MINIBATCHES
    assert glob.glob(str(out_dir / "tb" / "events.out.tfevents.*"))
    assert "final reward" in trainer.last_summary.render()


def test_restarting_a_finished_run_adds_no_checkpoint(out_dir):
    config = get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=2))
    execute_exp(config, "train")
    folder = out_dir / "checkpoints"
    before = sorted(p.name for p in folder.glob("ckpt.*.pth"))
    again = execute_exp(config, "train")
    assert again.num_updates_done == 2
    # A second copy of the last weights (ckpt.<n+1>.pth) was saved on every restart.
    assert before and sorted(p.name for p in folder.glob("ckpt.*.pth")) == before


def test_resuming_on_another_number_of_ranks_says_so(out_dir, monkeypatch):
    config = get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=1))
    execute_exp(config, "train")
    files = ResumeStateFiles(str(out_dir / "checkpoints"))
    state = files.load()
    assert state["requeue_stats"]["world_size"] == 1
    state["requeue_stats"]["world_size"] = 2  # as a 2-rank run saves it
    files.save(state)
    warned = []
    monkeypatch.setattr(base.logger, "warning", warned.append)
    execute_exp(config, "train")
    assert [w for w in warned if "rank" in w] == [
        "resuming a run of 2 rank(s) on 1: each update now collects 1/2 of the steps it "
        "did, and the step budget is reached in a different number of updates"
    ]


def test_a_stop_signal_during_start_up_stops_before_the_first_update(out_dir, monkeypatch):
    # A handler of the test's own stands in for SIGUSR1's default action
    # (ending the process), which is what reached a rank signalled while it
    # built its envs: the trainer's handlers came only after.
    reached_default = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: reached_default.append(1))
    init = DDPPOTrainer._init_train

    def signalled_while_starting(trainer, resume_state):
        os.kill(os.getpid(), signal.SIGUSR1)
        init(trainer, resume_state)

    monkeypatch.setattr(DDPPOTrainer, "_init_train", signalled_while_starting)
    try:
        config = get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=5))
        trainer = execute_exp(config, "train")
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert reached_default == []
    assert trainer.num_updates_done == 0 and trainer.last_summary.stopped_early
    saved = ResumeStateFiles(str(out_dir / "checkpoints")).load()
    assert saved["requeue_stats"]["num_updates_done"] == 0


def test_a_run_resumed_from_a_copied_folder_goes_on_there(out_dir, tmp_path):
    # The stored config's folders used to win: the copy resumed, then wrote
    # its checkpoints, resume state and TensorBoard into the original run's.
    first = DDPPOTrainer(get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=4)))
    first._stop_requested = lambda: first.num_updates_done >= 2
    first.train()
    original = sorted(p.name for p in (out_dir / "checkpoints").iterdir())
    copy = tmp_path / "copy"
    shutil.copytree(out_dir, copy)
    trainer = execute_exp(
        get_config("gym/ddppo_cartpole", run_overrides(copy, num_updates=4)), "train"
    )
    assert trainer.num_updates_done == 4
    assert trainer.config.habitat_baselines.checkpoint_folder == str(copy / "checkpoints")
    assert (
        ResumeStateFiles(str(copy / "checkpoints")).load()["requeue_stats"]["num_updates_done"] == 4
    )
    assert sorted(p.name for p in (out_dir / "checkpoints").iterdir()) == original
    assert (
        ResumeStateFiles(str(out_dir / "checkpoints")).load()["requeue_stats"]["num_updates_done"]
        == 2
    )


def test_checkpoint_interval_saves_the_last_weights_once(out_dir):
    overrides = run_overrides(out_dir, num_updates=3) + [
        "habitat_baselines.num_checkpoints=-1",
        "habitat_baselines.checkpoint_interval=1",
    ]
    execute_exp(get_config("gym/ddppo_cartpole", overrides), "train")
    # One checkpoint per update; the last one used to be saved twice.
    assert _checkpoint_steps(out_dir / "checkpoints") == [u * NUM_STEPS * 2 for u in (1, 2, 3)]


class _CrashError(Exception):
    """A stand-in for a crash in the middle of training."""


def test_a_crash_between_resume_state_saves_resumes_from_the_last_checkpoint(out_dir, monkeypatch):
    # Resume state every 100 updates (the shipped default), a checkpoint every
    # 2 of 8 updates, and a crash in update 6: the restart goes on from the
    # checkpoint of update 4, not from step 0 over the old checkpoints.
    schedule = [
        "habitat_baselines.num_checkpoints=4",
        "habitat_baselines.rl.preemption.save_resume_state_interval=100",
    ]
    config = get_config("gym/ddppo_cartpole", run_overrides(out_dir, 8) + schedule)
    learn = DDPPOTrainer.learn

    def crash_in_update_6(trainer, steps):
        if trainer.num_updates_done == 5:
            raise _CrashError()
        return learn(trainer, steps)

    monkeypatch.setattr(DDPPOTrainer, "learn", crash_in_update_6)
    with pytest.raises(_CrashError):
        execute_exp(config, "train")
    folder = out_dir / "checkpoints"
    saved = ResumeStateFiles(str(folder)).load()
    assert saved["requeue_stats"]["num_updates_done"] == 4
    monkeypatch.setattr(DDPPOTrainer, "learn", learn)

    trainer = execute_exp(config, "train")
    assert trainer.num_updates_done == 8
    # TensorBoard: one point per update. The restart hides what the crashed
    # run logged after its resume state (update 5), not the point of update 4.
    events = EventAccumulator(str(out_dir / "tb"))
    events.Reload()
    per_update = NUM_STEPS * 2
    assert [s.step for s in events.Scalars("system/sps")] == [u * per_update for u in range(1, 9)]
    # The same checkpoints, in the same order, as a run that never crashed.
    unbroken = out_dir.parent / "unbroken"
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(unbroken, 8) + schedule), "train")
    assert _checkpoint_steps(folder) == _checkpoint_steps(unbroken / "checkpoints")
    assert len(_checkpoint_steps(folder)) >= 3


def test_a_kill_between_the_first_checkpoint_and_its_resume_state_restarts(out_dir, monkeypatch):
    # ckpt.0 was written, its resume state not: the folder read as another
    # run's checkpoints, and every restart was refused.
    config = get_config(
        "gym/ddppo_cartpole",
        run_overrides(out_dir, 4)
        + ["habitat_baselines.rl.preemption.save_resume_state_interval=100"],  # shipped
    )
    save = ResumeStateFiles.save

    def killed_writing_a_checkpoints_state(files, state):
        if state["requeue_stats"]["num_updates_done"] > 0:
            raise _CrashError()
        save(files, state)

    monkeypatch.setattr(ResumeStateFiles, "save", killed_writing_a_checkpoints_state)
    with pytest.raises(_CrashError):
        execute_exp(config, "train")
    assert (out_dir / "checkpoints" / "ckpt.0.pth").is_file()
    monkeypatch.setattr(ResumeStateFiles, "save", save)
    trainer = execute_exp(config, "train")  # from step 0: the state before any checkpoint
    assert trainer.num_updates_done == 4


@pytest.mark.parametrize("other", ["ver", "appo"])
def test_a_run_is_not_resumed_under_another_trainer(out_dir, other):
    # Before: "'NoneType' object has no attribute 'items'" (ver's state under
    # ddppo) or an IndexError in appo's policy worker, after the envs started.
    first = DDPPOTrainer(get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=4)))
    first._stop_requested = lambda: first.num_updates_done >= 1
    first.train()
    config = get_config(f"gym/{other}_cartpole", run_overrides(out_dir, 4, num_envs=4))
    with pytest.raises(ConfigError, match=rf"trainer_name='{other}' is not allowed.*='ddppo'"):
        execute_exp(config, "train")
    saved = ResumeStateFiles(str(out_dir / "checkpoints")).load()
    assert saved["requeue_stats"]["num_updates_done"] == 1  # untouched


def _checkpoint_steps(folder):
    """``extra_state.step`` of ``ckpt.0.pth``, ``ckpt.1.pth``, ... in index order."""
    return [
        load_checkpoint_file(str(folder / f"ckpt.{n}.pth"))["extra_state"]["step"]
        for n in range(len(list(folder.glob("ckpt.*.pth"))))
    ]


def test_a_fresh_run_refuses_a_folder_of_another_runs_checkpoints(out_dir):
    folder = out_dir / "checkpoints"
    folder.mkdir(parents=True)
    save_checkpoint_file({"extra_state": {"step": 7}}, str(folder / "ckpt.0.pth"))
    trainer = get_trainer_class("ddppo")(
        get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=1))
    )
    with pytest.raises(CheckpointsWithoutResumeStateError, match="ckpt.0.pth"):
        trainer.train()
    assert load_checkpoint_file(str(folder / "ckpt.0.pth"))["extra_state"]["step"] == 7


def _start(out_dir, num_updates):
    cmd = [
        sys.executable,
        "-m",
        "habitat_ver.run",
        "--config-name=gym/ddppo_cartpole",
        *run_overrides(out_dir, num_updates=num_updates),
    ]
    return subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, text=True
    )


def _saved_updates(folder) -> int:
    try:
        state = ResumeStateFiles(str(folder)).load()
    except Exception:  # noqa: BLE001 - a file being replaced right now
        return 0
    return 0 if state is None else state["requeue_stats"]["num_updates_done"]


@pytest.mark.multiproc
def test_sigkill_then_restart_resumes_weights_optimizer_and_counters(out_dir):
    total = 100
    proc = _start(out_dir, total)
    deadline = time.monotonic() + 240
    while _saved_updates(out_dir / "checkpoints") < 3:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "no resume state written"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # no chance to save anything more
    proc.wait()
    killed_at = _saved_updates(out_dir / "checkpoints")
    assert 3 <= killed_at < total

    # The same command again (habitat's resume also restores the saved config).
    budget = total
    config = get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=budget))
    trainer = execute_exp(config, "train")
    assert trainer.num_updates_done == budget
    assert trainer.num_steps_done == budget * NUM_STEPS * 2
    resume = ResumeStateFiles(str(out_dir / "checkpoints")).load()
    # Adam kept counting from the killed run: the optimizer state was restored.
    assert _adam_steps(resume) == budget * EPOCHS * MINIBATCHES
    # The LR schedule was restored too (linear decay position = updates done).
    assert resume["lr_sched_state"]["last_epoch"] == budget


def _eval_latest(out_dir, *overrides):
    """The config evaluating ``out_dir``'s ``latest.pth``, with ``overrides``."""
    return get_config(
        "gym/ddppo_cartpole",
        run_overrides(out_dir)
        + [
            f"habitat_baselines.eval_ckpt_path_dir={out_dir}/checkpoints/latest.pth",
            "habitat_baselines.evaluate=True",
            *overrides,
        ],
    )


def test_evaluate_runs_the_saved_checkpoint(out_dir):
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(out_dir, 2)), "train")
    execute_exp(_eval_latest(out_dir, "habitat_baselines.test_episode_count=4"), "eval")
    (reward,) = tensorboard_scalars(out_dir / "tb")["eval_reward/average_reward"]
    # CartPole pays 1 per step; episodes last between 8 and 500 steps.
    assert 8 <= reward <= 500


def test_evaluation_builds_the_policy_the_checkpoint_was_trained_with(out_dir):
    # Trained with hidden_size 32 (the config says 64); evaluated with the
    # plain config. Upstream built the policy from the command line's config:
    # "size mismatch for net.state_encoder..." when loading the weights.
    size = "habitat_baselines.rl.ppo.hidden_size=32"
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(out_dir, 1) + [size]), "train")
    trainer = execute_exp(_eval_latest(out_dir, "habitat_baselines.test_episode_count=2"), "eval")
    assert trainer.agent.actor_critic.recurrent_hidden_size == 32
    assert trainer.config.habitat_baselines.rl.ppo.hidden_size == 64  # the command line's
    assert len(tensorboard_scalars(out_dir / "tb")["eval_reward/average_reward"]) == 1


def test_video_of_an_env_without_images_is_one_config_error(out_dir):
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(out_dir, 1)), "train")
    eval_config = _eval_latest(out_dir, "habitat_baselines.eval.video_option=[disk]")
    # Upstream asserted deep in its evaluator: "Expected at least one visual sensor".
    with pytest.raises(ConfigError, match=r"needs an image observation.*'obs': \(4,\)"):
        execute_exp(eval_config, "eval")


def test_time_limit_cuts_reach_the_lockstep_storage(out_dir, monkeypatch):
    # Env 1's every 4th step is reported as gym's TimeLimit cut; the storage
    # flags exactly those steps and bootstraps each from its own value.
    config = get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=1))
    trainer = DDPPOTrainer(config)
    trainer._init_train()
    # Upstream's read, under the pool's step hook (what the env sends).
    wait, calls = VectorEnv.wait_step_at, [0]

    def cut_every_4th_step_of_env_1(envs, index):
        obs, reward, done, info = wait(envs, index)
        if index == 1:
            calls[0] += 1
            if calls[0] % 4 == 0:
                done, info = True, dict(info, **{"TimeLimit.truncated": True})
        return obs, reward, done, info

    monkeypatch.setattr(VectorEnv, "wait_step_at", cut_every_4th_step_of_env_1)
    try:
        trainer.collect_rollout()
        rollouts = trainer.agent.rollouts
        cuts = rollouts.truncated[1 : NUM_STEPS + 1, :, 0]
        assert cuts[:, 1].tolist() == [(t + 1) % 4 == 0 for t in range(NUM_STEPS)]
        assert not cuts[:, 0].any()
        gamma = config.habitat_baselines.rl.ppo.gamma
        rollouts.compute_returns(torch.zeros(2, 1), True, gamma, 0.95)
        trainer.agent.updater.targets.fill_returns(rollouts)  # the run's estimator: GAE
        buffers = rollouts.buffers
        expected = buffers["rewards"][3, 1] + gamma * buffers["value_preds"][3, 1]
        torch.testing.assert_close(buffers["returns"][3, 1], expected)
    finally:
        trainer.envs.close()


STOP_AFTER = 2  # updates before the in-process SIGTERM


@pytest.fixture(scope="module")
def sigterm_run(tmp_path_factory):
    """A run that SIGTERMs itself after update 2, then a second run in the same
    process; returns the first run's folder and the signal state around it."""
    out = tmp_path_factory.mktemp("sigterm") / "run"
    trainer = get_trainer_class("ddppo")(
        get_config("gym/ddppo_cartpole", run_overrides(out, num_updates=10))
    )
    learn = trainer.learn

    def learn_then_signal(steps):
        losses = learn(steps)
        if trainer.num_updates_done == STOP_AFTER:
            os.kill(os.getpid(), signal.SIGTERM)  # handled: stop after this update
        return losses

    trainer.learn = learn_then_signal
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    trainer.train()
    after = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    exit_set = EXIT.is_set()
    second = execute_exp(
        get_config("gym/ddppo_cartpole", run_overrides(out.parent / "second", num_updates=2)),
        "train",
    )
    return dict(
        out=out, first=trainer, before=before, after=after, exit_set=exit_set, second=second
    )


def test_sigterm_stop_keeps_the_previous_resume_state_as_prev(sigterm_run):
    assert sigterm_run["first"].num_updates_done == STOP_AFTER
    files = ResumeStateFiles(str(sigterm_run["out"] / "checkpoints"))
    newest = load_checkpoint_file(files.path)["requeue_stats"]["num_updates_done"]
    previous = load_checkpoint_file(files.previous_path)["requeue_stats"]["num_updates_done"]
    # save_resume_state_interval=1: one write per update, so `.prev` is the
    # state one update earlier, not a second copy of the newest.
    assert (newest, previous) == (STOP_AFTER, STOP_AFTER - 1)


def test_training_restores_signal_handlers_and_clears_the_stop_event(sigterm_run):
    assert sigterm_run["after"] == sigterm_run["before"]
    assert not sigterm_run["exit_set"]
    # A second trainer in the same process is not stopped by the first's signal.
    assert sigterm_run["second"].num_updates_done == 2


def test_run_refuses_to_start_over_when_both_resume_states_are_corrupt(out_dir):
    folder = out_dir / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "ckpt.0.pth").write_bytes(b"the old run's first checkpoint")
    for name in ("resume-state.pth", "resume-state.prev.pth"):
        (folder / name).write_bytes(b"PK\x03\x04 not a whole zip")
    trainer = get_trainer_class("ddppo")(
        get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=1))
    )
    with pytest.raises(UnusableResumeStateError, match="resume-state.prev.pth"):
        trainer.train()
    assert (folder / "ckpt.0.pth").read_bytes() == b"the old run's first checkpoint"


def test_checkpoint_config_cannot_choose_code_to_run_at_evaluation(out_dir, tmp_path):
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(out_dir, 1)), "train")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    # A clean, weights_only-loadable checkpoint (checksum included) whose
    # stored config asks Hydra to call open(victim, "w").
    state = torch.load(str(out_dir / "checkpoints" / "latest.pth"), weights_only=True)
    state.pop("habitat_ver_checksum")
    state["config"]["habitat_baselines"]["vector_env_factory"] = {
        "_target_": "builtins.open",
        "file": str(victim),
        "mode": "w",
    }
    evil = out_dir / "evil.pth"
    save_checkpoint_file(state, str(evil))
    eval_config = get_config(
        "gym/ddppo_cartpole",
        run_overrides(out_dir)
        + [
            f"habitat_baselines.eval_ckpt_path_dir={evil}",
            "habitat_baselines.test_episode_count=2",
            "habitat_baselines.evaluate=True",
        ],
    )
    assert eval_config.habitat_baselines.load_resume_state_config  # upstream's default
    execute_exp(eval_config, "eval")  # with this run's env factory
    assert victim.read_text() == "precious"
    assert len(tensorboard_scalars(out_dir / "tb")["eval_reward/average_reward"]) == 1


def test_a_run_is_not_resumed_on_another_task(out_dir):
    # A config inheriting a shipped one's folders resumed that run's task
    # (the stored config wins) and reported its numbers for the new one.
    first = DDPPOTrainer(get_config("gym/ddppo_cartpole", run_overrides(out_dir, num_updates=4)))
    first._stop_requested = lambda: first.num_updates_done >= 1
    first.train()
    other_task = run_overrides(out_dir, 4) + ["habitat.env_task_gym_id=Acrobot-v1"]
    with pytest.raises(
        ConfigError, match=r"env_task_gym_id='Acrobot-v1' is not allowed.*'CartPole-v1'"
    ):
        execute_exp(get_config("gym/ddppo_cartpole", other_task), "train")


def test_a_second_trainer_in_one_process_does_not_write_into_the_first_ones_log(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(first, 1)), "train")
    lines = (first / "train.log").read_text()
    execute_exp(get_config("gym/ver_cartpole", run_overrides(second, 1)), "train")
    assert (first / "train.log").read_text() == lines
    assert "update: 1" in (second / "train.log").read_text()
