"""The `appo` trainer on CartPole: steps, policy lag, V-trace learner, config."""

import glob
import math

import pytest
import torch

from habitat_ver.common.checkpoint import ResumeStateFiles
from habitat_ver.config.compose import get_config
from habitat_ver.config.validate import ConfigError
from habitat_ver.run import execute_exp
from habitat_ver.system.appo_buffers import TrajectoryBuffers
from habitat_ver.trainers.appo import AppoTrainer
from habitat_ver.updaters.entropy import LearnedEntropyCoefficient

from .conftest import (
    assert_learned_cartpole,
    cartpole_learning_overrides,
    run_overrides,
    tensorboard_scalars,
)

T, N = 16, 4


def _overrides(out_dir, updates=3, serial=True, extra=()):
    return run_overrides(out_dir, updates, num_envs=N) + [
        f"habitat_baselines.rl.appo.serial={serial}",
        "habitat_baselines.rl.appo.batch_trajectories=4",
        *extra,
    ]


def test_short_run_learns_on_batches_of_complete_trajectories(out_dir):
    trainer = execute_exp(get_config("gym/appo_cartpole", _overrides(out_dir, 3)), "train")
    assert trainer.num_updates_done == 3
    assert trainer.num_steps_done == 3 * 4 * T  # 4 trajectories of T steps per update
    assert len(trainer.policy_lag) == 3 and trainer.policy_lag[0] == (0.0, 0.0)
    assert glob.glob(str(out_dir / "checkpoints" / "ckpt.*.pth"))
    assert glob.glob(str(out_dir / "tb" / "events.out.tfevents.*"))


def test_policy_lag_reaches_tensorboard(out_dir):
    trainer = execute_exp(get_config("gym/appo_cartpole", _overrides(out_dir, 4)), "train")
    scalars = tensorboard_scalars(out_dir / "tb")
    assert scalars["system/policy_lag/mean"] == pytest.approx([m for m, _ in trainer.policy_lag])
    assert scalars["system/policy_lag/max"] == [x for _, x in trainer.policy_lag]
    assert "learner/loss/policy" in scalars and "learner/vtrace_rho_mean" in scalars


def _latest_published(published, seq):
    return max(version for s, version in published if s < seq)


@pytest.mark.parametrize("serial", [True, pytest.param(False, marks=pytest.mark.multiproc)])
def test_policy_workers_use_the_latest_or_previous_version(out_dir, serial):
    trainer = AppoTrainer(get_config("gym/appo_cartpole", _overrides(out_dir, 6, serial)))
    trainer.train()
    worker = trainer._policy_worker
    published = list(worker.published)
    assert [v for _, v in published] == list(range(7))  # initial + one per update
    assert len(worker.served) > 6 * 4 * T / N  # every inference batch was recorded
    for seq, used in worker.served:
        n = _latest_published(published, seq)
        assert used in (n, n - 1)
    # Learnt steps were at most max_policy_lag versions old.
    assert (
        max(x for _, x in trainer.policy_lag)
        <= trainer.config.habitat_baselines.rl.appo.max_policy_lag
    )


def test_max_policy_lag_drops_older_trajectories(out_dir):
    # The policy worker keeps acting while the learner learns, so with
    # max_policy_lag=0 trajectories begun before an update must be dropped.
    overrides = _overrides(
        out_dir,
        4,
        extra=[
            "habitat_baselines.rl.appo.max_policy_lag=0",
            "habitat_baselines.rl.ppo.ppo_epoch=4",
        ],
    )
    trainer = execute_exp(get_config("gym/appo_cartpole", overrides), "train")
    assert [x for _, x in trainer.policy_lag] == [0.0] * 4
    assert trainer.num_steps_done == (4 * 4 + trainer.dropped_trajectories) * T


def test_learner_moves_the_policy_and_publishes_it(out_dir):
    trainer = AppoTrainer(get_config("gym/appo_cartpole", _overrides(out_dir, 1)))
    trainer._init_train()
    try:
        before = {k: v.clone() for k, v in trainer.agent.actor_critic.state_dict().items()}
        steps = trainer.collect_rollout()
        losses = trainer._update_agent()
        assert steps == 4 * T
        for key in (
            "learner/loss/policy",
            "learner/loss/value",
            "learner/loss/entropy",
            "learner/clip_fraction",
            "learner/entropy_coef",
            "system/policy_lag/mean",
            "system/policy_lag/max",
            "system/dropped_trajectories",
        ):
            assert key in losses and losses[key] == losses[key], key  # present, not NaN
        after = trainer.agent.actor_critic.state_dict()
        assert any(not torch.equal(before[k], after[k]) for k in before)
        acting = trainer._policy_worker.policy.state_dict()
        assert all(torch.equal(acting[k], after[k]) for k in after)
        assert trainer._policy_worker.version == 1
    finally:
        trainer.envs.close()


def _held_storages(trainer):
    from habitat_baselines.common.storage import Storage

    held = list(vars(trainer).values()) + list(vars(trainer.agent).values())
    return [x for x in held if isinstance(x, Storage)]


def test_the_trajectory_slots_are_the_agents_only_storage(out_dir):
    trainer = AppoTrainer(get_config("gym/appo_cartpole", _overrides(out_dir, 1)))
    trainer._init_train()
    try:
        assert trainer.agent.rollouts is trainer._trajectories
        assert isinstance(trainer._trajectories, TrajectoryBuffers)
        assert trainer._trajectories.num_slots == 2 * 4 + N  # 2 * batch + envs
        assert _held_storages(trainer) == []  # no lock-step RolloutStorage
    finally:
        trainer.envs.close()


def test_learned_entropy_coefficient_is_stepped_by_appos_updates(out_dir):
    overrides = _overrides(
        out_dir,
        2,
        extra=[
            "habitat_baselines.rl.ppo.use_adaptive_entropy_pen=True",
            "habitat_baselines.rl.ppo.entropy_coef=1e-3",
        ],
    )
    trainer = execute_exp(get_config("gym/appo_cartpole", overrides), "train")
    coef = trainer.agent.updater.entropy_coef
    assert isinstance(coef, LearnedEntropyCoefficient)
    # CartPole's 2-action policy has entropy ~log 2 > target 0: alpha went
    # down from its initial 1e-3, by ~lr = 1e-3 in log space per Adam step
    # (2 updates x 2 epochs x 1 minibatch).
    assert float(coef.log_alpha) < math.log(1e-3) - 0.003
    assert trainer.agent.updater.targets.__class__.__name__ == "VTraceTargets"
    logged = tensorboard_scalars(out_dir / "tb")["learner/entropy_coef"]
    assert len(logged) == 2 and 1e-4 <= logged[1] < logged[0] < 1e-3 * math.exp(-0.001)


def test_a_restarted_run_resumes_counters_and_optimizer(out_dir):
    config = get_config("gym/appo_cartpole", _overrides(out_dir, 4))
    first = AppoTrainer(config)
    # A stop request after 2 updates (what SIGTERM does): resume state, exit.
    first._stop_requested = lambda: first.num_updates_done >= 2
    first.train()
    assert first.num_updates_done == 2
    steps_per_update = first.num_steps_done / 2
    # The same command again resumes from the saved state.
    trainer = execute_exp(config, "train")
    assert trainer.num_updates_done == 4
    assert [v for _, v in trainer._policy_worker.published] == [2, 3, 4]
    state = ResumeStateFiles(str(out_dir / "checkpoints")).load()
    adam_steps = {int(s["step"]) for s in state["optim_state"]["state"].values()}
    # 4 updates x 2 epochs x 1 minibatch: Adam kept counting across the restart.
    assert adam_steps == {4 * 2}
    assert trainer.num_steps_done >= first.num_steps_done + 2 * steps_per_update
    # The episode statistics go on from the saved ones: the reward window is
    # cumulative, so a restart from 0 made its differences negative.
    counts = [float(c.sum()) for c in trainer.window_episode_stats["count"]]
    assert counts == sorted(counts) and counts[-1] > float(
        first.running_episode_stats["count"].sum()
    )
    # A window with no finished episode logs 0 (appo's first update may end
    # none); a negative reward is the restart bug.
    rewards = tensorboard_scalars(out_dir / "tb")["reward"]
    assert min(rewards) >= 0 and max(rewards) > 0


def test_evaluate_runs_an_appo_checkpoint(out_dir):
    execute_exp(get_config("gym/appo_cartpole", _overrides(out_dir, 2)), "train")
    eval_config = get_config(
        "gym/appo_cartpole",
        _overrides(out_dir)
        + [
            f"habitat_baselines.eval_ckpt_path_dir={out_dir}/checkpoints/latest.pth",
            "habitat_baselines.test_episode_count=4",
            "habitat_baselines.evaluate=True",
        ],
    )
    execute_exp(eval_config, "eval")
    (reward,) = tensorboard_scalars(out_dir / "tb")["eval_reward/average_reward"]
    # CartPole pays 1 per step; episodes last between 8 and 500 steps.
    assert 8 <= reward <= 500


@pytest.mark.parametrize(
    "key, value, match",
    [
        ("num_rollout_workers", 3, r"num_rollout_workers=3 .*divisor of .*num_environments=4"),
        ("num_env_groups", 3, r"num_env_groups=3 .*divisor of the envs per rollout worker \(2\)"),
        ("vtrace_rho_clip", 0.0, r"vtrace_rho_clip=0.0 .*must be > 0"),
        ("vtrace_c_clip", -1.0, r"vtrace_c_clip=-1.0 .*must be > 0"),
        ("max_policy_lag", -1, r"max_policy_lag=-1 .*must be >= 0"),
        (
            "num_trajectory_slots",
            5,
            r"num_trajectory_slots=5 .*>= batch_trajectories \+ num_environments",
        ),
    ],
)
def test_bad_appo_keys_are_named(out_dir, key, value, match):
    config = get_config(
        "gym/appo_cartpole",
        _overrides(out_dir, 1, extra=[f"habitat_baselines.rl.appo.{key}={value}"]),
    )
    with pytest.raises(ConfigError, match=match):
        AppoTrainer(config)


@pytest.mark.parametrize(
    "override, match",
    [
        (
            "habitat_baselines.rl.ppo.use_double_buffered_sampler=True",
            r"use_double_buffered_sampler=True is not allowed: False for trainer 'appo'",
        ),
        (
            "habitat_baselines.rl.ppo.use_gae=False",
            r"use_gae=False is not allowed: True for trainer 'appo'.*V-trace",
        ),
        (
            "habitat_baselines.rl.ver.overlap_rollouts_and_learn=True",
            r"overlap_rollouts_and_learn=True is not allowed: False for trainer 'appo'",
        ),
        (
            "habitat_baselines.updater_name=DDPPO",
            r"updater_name='DDPPO' is not allowed: PPOUpdater \(or a subclass\)",
        ),
    ],
)
def test_keys_appo_cannot_honour_are_refused(out_dir, override, match):
    config = get_config("gym/appo_cartpole", _overrides(out_dir, 1, extra=[override]))
    with pytest.raises(ConfigError, match=match):
        AppoTrainer(config)


def test_appo_is_registered():
    from habitat_baselines.common.baseline_registry import baseline_registry

    assert baseline_registry.get_trainer("appo") is AppoTrainer


@pytest.mark.slow
def test_solves_cartpole_within_the_budget(out_dir):
    # The config's recipe (32 steps, 10 epochs), not run_overrides' tiny one.
    overrides = cartpole_learning_overrides(out_dir, ppo_epoch=10)
    trainer = execute_exp(get_config("gym/appo_cartpole", overrides), "train")
    assert_learned_cartpole(trainer)
