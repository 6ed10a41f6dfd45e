"""The `ver` trainer on CartPole: variable rollouts, NoVER, inflight actions."""

import os
import queue
import signal
import subprocess
import sys
import time
from pathlib import Path

import gym
import pytest
import torch

from habitat_ver.common.checkpoint import ResumeStateFiles
from habitat_ver.config.compose import get_config
from habitat_ver.config.validate import ConfigError
from habitat_ver.distributed.preemption_rule import PreemptionRule
from habitat_ver.run import execute_exp
from habitat_ver.system.reward_guard import NonFiniteRewardError
from habitat_ver.system.stop_signals import sigint_as_in_a_terminal
from habitat_ver.trainers.ver import VERTrainer

from .conftest import run_overrides, tensorboard_scalars

T, N = 16, 2


def _straggler(slow_index: int, seconds: float):
    """Env ``slow_index`` waits ``seconds`` per step, the others 1 ms."""
    s = "habitat_baselines.embedded_env.straggler"
    return [
        f"{s}.enabled=True",
        f"{s}.base_step_seconds=0.001",
        f"{s}.speed_factor_min=1.0",
        f"{s}.speed_factor_max=1.0",
        f"{s}.jitter=0.0",
        f"{s}.long_step_prob=0.0",
        f"{s}.slow_env_indices=[{slow_index}]",
        f"{s}.slow_factor={seconds / 0.001}",
    ]


def test_short_run_collects_t_times_n_steps_per_rollout(out_dir):
    trainer = execute_exp(get_config("gym/ver_cartpole", run_overrides(out_dir, 3)), "train")
    assert trainer.num_updates_done == 3
    assert trainer.num_steps_done == 3 * T * N
    assert [sum(c) for c in trainer.env_steps_per_rollout] == [T * N] * 3
    resume = ResumeStateFiles(str(out_dir / "checkpoints")).load()
    steps = {int(s["step"]) for s in resume["optim_state"]["state"].values()}
    assert steps == {3 * 2 * 1}  # updates x epochs x minibatches
    # Each update logs its inference calls' mean batch (1 to N envs) and seconds.
    scalars = tensorboard_scalars(out_dir / "tb")
    assert all(1.0 <= b <= N for b in scalars["system/inference_batch"])
    assert len(scalars["system/inference_seconds"]) == 3
    assert all(s > 0 for s in scalars["system/inference_seconds"])


def test_auto_overlap_follows_its_rule_update_by_update(out_dir, monkeypatch):
    """overlap_rollouts_and_learn=auto: each update asks the rule with the last
    learning time and its threads, this rollout's wait and the cores the run
    left unused meanwhile, and does what it says; switching overlap on and off
    between updates loses no step."""
    import os

    import habitat_ver.trainers.ver as ver_module

    asked = []

    def every_other(learn_s, collect_s, spare_cores, learn_threads):
        asked.append((learn_s, collect_s))
        assert 0.0 <= spare_cores <= os.cpu_count()
        assert 1 <= learn_threads <= os.cpu_count()
        return len(asked) % 2 == 0

    monkeypatch.setattr(ver_module, "auto_overlaps", every_other)
    overrides = run_overrides(out_dir, 5) + [
        "habitat_baselines.rl.ver.overlap_rollouts_and_learn=auto"
    ]
    trainer = execute_exp(get_config("gym/ver_cartpole", overrides), "train")
    assert trainer.overlapped == [False, True, False, True, False]
    assert asked[0][0] == 0.0 and all(learn > 0 for learn, _ in asked[1:])
    assert all(collect > 0 for _, collect in asked)
    assert trainer.num_steps_done == 5 * T * N
    assert [sum(c) for c in trainer.env_steps_per_rollout] == [T * N] * 5
    scalars = tensorboard_scalars(out_dir / "tb")
    assert scalars["system/overlap"] == [0.0, 1.0, 0.0, 1.0, 0.0]
    spare = scalars["system/collect_spare_cores"]
    assert len(spare) == 5 and all(0.0 <= cores <= os.cpu_count() for cores in spare)


@pytest.mark.parametrize(
    "learn_s, collect_s, spare_cores, overlaps",
    [
        # Unknown spare cores: the times alone decide (learning >= 1/4 of the update).
        (1.0, 3.0, None, True),
        (0.99, 3.01, None, False),
        (3.0, 0.0, None, True),
        (0.0, 0.0, None, False),
        # The run's collection kept the cores busy: learning beside it would take them.
        (1.0, 3.0, 0.49, False),
        (1.0, 3.0, 0.5, True),
        (0.99, 3.01, 1.5, False),
    ],
)
def test_auto_overlaps_from_a_quarter_of_the_update_and_spare_cores(
    learn_s, collect_s, spare_cores, overlaps
):
    from habitat_ver.trainers.ver_settings import auto_overlaps

    assert auto_overlaps(learn_s, collect_s, spare_cores) is overlaps


@pytest.mark.parametrize(
    "learn_s, collect_s, threads, overlaps",
    [
        # Doom (a), quiet: 4.0 s learning on 2 threads; on one, up to 8 s > 5.5.
        (4.0, 1.5, 2, False),
        # Workload (c): 1.13 s on 2 threads, 2.26 s on one, hidden by 3.01 s.
        (1.13, 3.01, 2, True),
        # The edge: one thread as long as the whole lock-step update.
        (2.0, 2.0, 2, False),
        (1.9, 2.0, 2, True),
        # Learnt on one thread already (or an overlapped update): times alone.
        (4.0, 1.5, 1, True),
    ],
)
def test_auto_does_not_overlap_where_learning_loses_its_threads(
    learn_s, collect_s, threads, overlaps
):
    from habitat_ver.trainers.ver_settings import auto_overlaps

    assert auto_overlaps(learn_s, collect_s, 1.0, threads) is overlaps


@pytest.mark.parametrize(
    "overrides, expected, notes",
    [
        ([], (0.25, 0.0), []),
        (["habitat_baselines.rl.ver.min_batch_fraction=0.5"], (0.5, 0.0), []),
        # The deprecated keys still set the values, and each says where they moved.
        (
            [
                "habitat_baselines.rl.ver.min_batch_fraction=0.5",
                "habitat_baselines.ver_system.min_batch_fraction=0.75",
                "habitat_baselines.ver_system.max_wait_ms=3",
            ],
            (0.75, 3.0),
            [
                "habitat_ver: habitat_baselines.ver_system.min_batch_fraction is deprecated: "
                "set habitat_baselines.rl.ver.min_batch_fraction instead",
                "habitat_ver: habitat_baselines.ver_system.max_wait_ms is deprecated: "
                "set habitat_baselines.rl.ver.max_wait_ms instead",
            ],
        ),
    ],
)
def test_inference_batching_is_read_from_rl_ver_and_the_old_keys(overrides, expected, notes):
    from habitat_ver.trainers.ver_settings import inference_batching

    batching = inference_batching(get_config("gym/ver_cartpole", overrides))
    assert (batching.min_batch_fraction, batching.max_wait_ms) == expected
    assert batching.deprecation_notes() == notes


def test_the_collector_batches_as_rl_ver_says(out_dir):
    trainer = _trainer(
        out_dir,
        [
            "habitat_baselines.rl.ver.min_batch_fraction=0.5",
            "habitat_baselines.rl.ver.max_wait_ms=7",
        ],
    )
    try:
        collector = trainer.collector
        n = trainer.envs.num_envs
        assert (collector._min_batch, collector._max_wait_s) == (max(1, int(0.5 * n)), 0.007)
    finally:
        trainer.envs.close()


def test_nover_takes_exactly_t_steps_from_every_env(out_dir):
    overrides = run_overrides(out_dir, 3) + ["habitat_baselines.rl.ver.variable_experience=False"]
    trainer = execute_exp(get_config("gym/ver_cartpole", overrides), "train")
    assert trainer.env_steps_per_rollout == [[T] * N] * 3


def _trainer(out_dir, extra):
    config = get_config("gym/ver_cartpole", run_overrides(out_dir, 2) + extra)
    trainer = VERTrainer(config)
    trainer._init_train()
    return trainer


def _wait_for_result(envs, env, timeout_s=60.0):
    """Blocks until ``env``'s result has arrived; the pool's ready queue is
    left as it was (what arrived stays queued, in order)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no result from env {env} in {timeout_s} s"
        ready = envs.wait_ready(envs.num_envs, envs.num_envs, max_wait_s=0.05, timeout=left)
        envs.push_back(ready)
        if env in ready:
            return


@pytest.mark.multiproc
def test_slow_envs_step_lands_once_in_the_next_rollout(out_dir):
    # Env 0 takes 1.5 s per step; env 1 is free. Rollout 1 fills its T*N
    # steps from env 1 alone while env 0's first action is in flight.
    trainer = _trainer(out_dir, _straggler(0, 1.5))
    try:
        assert trainer.collect_rollout() == T * N
        assert trainer.env_steps_per_rollout[0] == [0, T * N]
        trainer.learn(T * N)
        rollouts = trainer.agent.rollouts
        assert rollouts.current_policy_version == 2
        # Env 0's in-flight step was carried to the front of the new rollout,
        # stamped with the policy version that chose its action.
        assert int(rollouts.buffers["policy_version"][0]) == 1
        _wait_for_result(trainer.envs, 0)
        assert trainer.collect_rollout() == T * N
        env0 = trainer.env_steps_per_rollout[1][0]
        assert env0 == 1  # its one step, counted once, in the second rollout
        assert sum(trainer.env_steps_per_rollout[1]) == T * N
    finally:
        trainer.envs.close()


@pytest.mark.multiproc
@pytest.mark.parametrize("last_learn_s, settles", [(4.0, True), (0.04, False)])
def test_a_lockstep_update_waits_for_the_steps_in_flight_up_to_its_cap(
    out_dir, last_learn_s, settles
):
    # Env 0 takes 0.3 s per step: when rollout 1 is full its first action is
    # still in flight. Before learning, the trainer waits for it for at most
    # a quarter of the last learning time (1 s: it arrives and is held; 0.01 s:
    # learning starts without it), so that the learner may take idle cores.
    trainer = _trainer(out_dir, _straggler(0, 0.3))
    try:
        trainer._scheduler.threads.may_take_several = lambda device: True
        assert trainer.collect_rollout() == T * N
        collector = trainer.collector
        assert collector._in_flight == 2  # env 1's last action too
        trainer._last_learn_time = last_learn_s
        before = trainer._collect_seconds
        trainer.learn(T * N)
        assert (collector._in_flight == 0) == settles
        assert (0 in collector.held) == settles
        waited = trainer._collect_seconds - before
        assert waited <= 0.25 * last_learn_s + 0.2
        # A wait that ran out pauses waiting for the next 20 updates.
        assert trainer._scheduler.settle_resumes_at == (0 if settles else 20)
        if not settles:
            _wait_for_result(trainer.envs, 0)
        # Whether it arrived before learning or after, env 0's one step lands
        # once in the next rollout.
        assert trainer.collect_rollout() == T * N
        assert trainer.env_steps_per_rollout[1][0] == 1
    finally:
        trainer.envs.close()


def test_importance_weights_reach_the_loss(out_dir):
    trainer = _trainer(out_dir, _straggler(0, 0.2))
    try:
        trainer.collect_rollout()
        losses = trainer.learn(T * N)
        counts = torch.tensor(trainer.env_steps_per_rollout[0], dtype=torch.float)
        assert counts[0] < counts[1]  # the slow env contributed less
        assert "learner/is_weight/max" in losses and losses["learner/is_weight/max"] <= 1.0
        assert losses["learner/is_weight/min"] < 1.0  # the fast env is down-weighted
    finally:
        trainer.envs.close()


def _flat(tree, prefix=""):
    """Copies of every tensor of a (nested) TensorDict, keyed by path."""
    flat = {}
    for key, value in tree.items():
        if isinstance(value, torch.Tensor):
            flat[prefix + key] = value.clone()
        else:
            flat.update(_flat(value, f"{prefix}{key}/"))
    return flat


@pytest.mark.multiproc
def test_envs_keep_stepping_while_ppo_learns(out_dir):
    trainer = _trainer(out_dir, ["habitat_baselines.rl.ver.overlap_rollouts_and_learn=True"])
    try:
        assert trainer.collect_rollout() == T * N
        learnt = trainer.agent.rollouts
        update, during, before = trainer.agent.updater.update, [], {}

        def update_once_envs_stepped(rollouts):
            # Learning starts only once the next rollout has 8 new steps, so
            # they were collected while this update was running. The update's
            # targets step writes the returns (the learner's own write): filled
            # here first, the same numbers, so the snapshot holds them.
            trainer.agent.updater.targets.fill_returns(rollouts)
            before.update(_flat(rollouts.buffers))
            nxt, deadline = trainer.agent._spare, time.monotonic() + 60
            while nxt.steps_collected < 8 and time.monotonic() < deadline:
                time.sleep(0.005)
            during.append(nxt.steps_collected)
            return update(rollouts)

        trainer.agent.updater.update = update_once_envs_stepped
        trainer.learn(T * N)
        assert during[0] >= 8
        # The storage PPO learnt from was not written by the collector.
        after = _flat(learnt.buffers)
        assert after.keys() == before.keys()
        for key, tensor in after.items():
            torch.testing.assert_close(tensor, before[key], equal_nan=True, rtol=0, atol=0)
        current = trainer.agent.rollouts
        assert current is not learnt and current.current_policy_version == 2
        carried = int(current._counters["num_slots"])
        stale = current.buffers["policy_version"][:carried].view(-1)
        assert stale.tolist() == [1] * carried  # acted on by the pre-update copy
        trainer.agent.updater.update = update
        # The overlapped steps count once, in the rollout they landed in.
        assert trainer.collect_rollout() == T * N
        assert sum(trainer.env_steps_per_rollout[1]) == T * N
        losses = trainer.learn(T * N)
        assert losses["system/policy_lag/max"] == 1.0
        assert trainer.num_steps_done == 2 * T * N
    finally:
        trainer.envs.close()


@pytest.mark.multiproc
def test_a_rollout_filled_while_learning_is_taken_as_it_is(out_dir):
    # Learning outlasts a whole collection (PPO on a slow CPU): the overlapped
    # collector fills the next rollout, and the envs it could not admit wait.
    trainer = _trainer(out_dir, ["habitat_baselines.rl.ver.overlap_rollouts_and_learn=True"])
    try:
        trainer.collect_rollout()
        update = trainer.agent.updater.update

        def update_once_next_rollout_full(rollouts):
            nxt, deadline = trainer.agent._spare, time.monotonic() + 60
            while not nxt.rollout_done and time.monotonic() < deadline:
                time.sleep(0.005)
            return update(rollouts)

        trainer.agent.updater.update = update_once_next_rollout_full
        trainer.learn(T * N)
        assert trainer.agent.rollouts.rollout_done
        # Envs whose step arrives now find no room: they are held, as the
        # collector holds those it cannot admit.
        collector = trainer.collector
        assert collector.admit(collector.wait_ready(), trainer.agent.rollouts) == []
        assert collector.held
        trainer.agent.updater.update = update
        assert trainer.collect_rollout() == T * N
        assert sum(trainer.env_steps_per_rollout[1]) == T * N
        trainer.learn(T * N)
        # The held envs start the rollout after: nothing lost, nothing twice.
        assert trainer.collect_rollout() == T * N
        assert trainer.num_steps_done == 2 * T * N
    finally:
        trainer.envs.close()


def _serial_overlap_trainer(out_dir):
    """3 in-process CartPole envs, overlap of collection and learning on."""
    config = get_config(
        "gym/ver_cartpole",
        run_overrides(out_dir, 2, num_envs=3)
        + ["habitat_baselines.rl.ver.overlap_rollouts_and_learn=True"],
    )
    trainer = VERTrainer(config)
    trainer.serial_envs = True
    trainer._init_train()
    return trainer


def test_overlapped_collector_acts_on_held_envs_first(out_dir):
    # In-process envs, learning outlasting collection: env 0's result arrives
    # when the rollout is full, so it is held. The overlapped collector must
    # act on it; it stayed idle before (next rollout's counts [0, 24, 24]).
    trainer = _serial_overlap_trainer(out_dir)
    try:
        assert trainer.collect_rollout() == T * 3
        collector = trainer.collector
        ready = collector.wait_ready()
        assert ready == [0, 1, 2]
        trainer.envs.push_back(ready[1:])
        assert collector.admit(ready[:1], trainer.agent.rollouts) == []
        assert collector.held == [0]
        update = trainer.agent.updater.update

        def update_once_next_rollout_full(rollouts):
            nxt = trainer.agent._spare
            deadline = time.monotonic() + 60
            while not nxt.rollout_done and time.monotonic() < deadline:
                time.sleep(0.005)
            return update(rollouts)

        trainer.agent.updater.update = update_once_next_rollout_full
        trainer.learn(T * 3)
        counts = trainer.agent.rollouts.env_steps.tolist()
        assert sum(counts) == T * 3 and min(counts) >= T - 1, counts
    finally:
        trainer.envs.close()


def test_nonfinite_rewards_are_counted_then_fail_naming_the_env(out_dir):
    # Env 1 of 2 pays NaN at every step: its 16 steps of rollout 1 are learnt
    # as 0 and counted; with max_nonfinite_rewards=20 the 21st is fatal.
    config = get_config(
        "gym/ver_cartpole",
        run_overrides(out_dir, 2) + ["habitat_baselines.rl.max_nonfinite_rewards=20"],
    )
    trainer = VERTrainer(config)
    trainer.serial_envs = True
    trainer._init_train()
    read = trainer.envs.read

    def read_nan_for_env_1(ids):
        observations, rewards, dones, infos = read(ids)
        rewards[ids == 1] = float("nan")
        return observations, rewards, dones, infos

    trainer.envs.read = read_nan_for_env_1
    try:
        assert trainer.collect_rollout() == T * N
        rollouts = trainer.agent.rollouts
        learnable = rollouts._slots["learnable"] & (rollouts._slots["env_ids"] == 1)
        assert int(learnable.sum()) == 16
        assert rollouts.buffers["rewards"][learnable].abs().sum() == 0.0
        losses = trainer.learn(T * N)
        assert losses["system/nonfinite_rewards"] == 16.0
        with pytest.raises(
            NonFiniteRewardError, match=r"environment 1 returned reward nan: 21 non-finite"
        ):
            trainer.collect_rollout()
    finally:
        trainer.envs.close()


def test_bad_max_nonfinite_rewards_is_named(out_dir):
    # (A float is refused by the schema's int type when the config is composed.)
    config = get_config(
        "gym/ver_cartpole",
        run_overrides(out_dir, 1) + ["habitat_baselines.rl.max_nonfinite_rewards=-1"],
    )
    with pytest.raises(ConfigError, match=r"max_nonfinite_rewards=-1 .*integer >= 0"):
        VERTrainer(config)


SHORT_CARTPOLE = "habitat_ver_test/ShortCartPole-v0"


def test_time_limit_cuts_bootstrap_in_the_storage(out_dir):
    # CartPole cut after 3 steps (never falls that soon): every episode end is
    # gym's TimeLimit cut, and each cut step's return is r + gamma * V(s_t).
    if SHORT_CARTPOLE not in gym.envs.registry.env_specs:
        gym.register(
            SHORT_CARTPOLE, entry_point="gym.envs.classic_control:CartPoleEnv", max_episode_steps=3
        )
    config = get_config(
        "gym/ver_cartpole",
        run_overrides(out_dir, 2) + [f"habitat.env_task_gym_id={SHORT_CARTPOLE}"],
    )
    trainer = VERTrainer(config)
    trainer.serial_envs = True
    trainer._init_train()
    try:
        trainer.collect_rollout()
        rollouts = trainer.agent.rollouts
        learnable = rollouts._slots["learnable"]
        dones, cuts = rollouts._slots["dones"][learnable], rollouts._slots["truncated"][learnable]
        assert int(dones.sum()) >= 8 and torch.equal(cuts, dones)
        gamma = config.habitat_baselines.rl.ppo.gamma
        rollouts.compute_returns(None, True, gamma, config.habitat_baselines.rl.ppo.tau)
        trainer.agent.updater.targets.fill_returns(rollouts)  # the run's estimator: GAE
        slots = torch.nonzero(rollouts._slots["truncated"] & learnable).view(-1)
        torch.testing.assert_close(
            rollouts.buffers["returns"][slots], 1.0 + gamma * rollouts.buffers["value_preds"][slots]
        )
    finally:
        trainer.envs.close()


class _RecordingRule(PreemptionRule):
    """A preemption rule that never stops a rank: records the step times and
    new steps it is told of."""

    def __init__(self):
        self.step_times, self.counted = [], []

    def end_rollout(self, update, rollout):
        self.step_times.append(rollout.step_time)

    def should_stop(self, update, progress):
        self.counted.append(progress.new_steps)
        return False


def test_step_time_counts_the_time_of_steps_collected_while_learning(out_dir):
    # A clock that advances 0.01 s per env step sent (in-process envs step at
    # once): 3 envs stepping in turn take 0.03 s per step of one env. Learning
    # outlasts collection, so the overlapped collector fills all 48 steps of
    # rollout 2 (0.48 s) and its own collection window adds none. Its step
    # time is 0.48 s * 3 envs / 48 steps = 0.03 s; it was 0 (0 s / 48 steps).
    trainer = _serial_overlap_trainer(out_dir)
    sent = [0]
    trainer.collector.clock = lambda: 0.01 * sent[0]
    send = trainer.envs.send_actions

    def counting_send(ids, actions):
        sent[0] += len(ids)
        send(ids, actions)

    trainer.envs.send_actions = counting_send
    trainer._preemption = tracker = _RecordingRule()
    try:
        assert trainer.collect_rollout() == T * 3
        update = trainer.agent.updater.update

        def update_once_next_rollout_full(rollouts):
            nxt, deadline = trainer.agent._spare, time.monotonic() + 60
            while not nxt.rollout_done and time.monotonic() < deadline:
                time.sleep(0.005)
            return update(rollouts)

        trainer.agent.updater.update = update_once_next_rollout_full
        trainer.learn(T * 3)
        before = sent[0]
        assert trainer.collect_rollout() == T * 3
        assert sent[0] == before  # nothing left to collect after learning
        assert tracker.counted == [T * 3]  # yet the other ranks learn of its steps
        assert tracker.step_times[1] == pytest.approx(0.03)
        assert trainer.rollout_stats[1]["collect_s"] == pytest.approx(0.48)
    finally:
        trainer.envs.close()


def test_steps_collected_while_learning_count_towards_the_preemption_target(out_dir):
    # Learning ends once the overlapped collector has 8 steps of rollout 2;
    # the rest come in the collection window. All 48 count towards VER's S
    # (before: only the window's, 40 or fewer).
    trainer = _serial_overlap_trainer(out_dir)
    trainer._preemption = tracker = _RecordingRule()
    try:
        trainer.collect_rollout()
        assert tracker.counted == []  # the first rollout is never preempted
        update = trainer.agent.updater.update

        wait_ready = trainer.envs.wait_ready

        def nothing_ready(*args, **kwargs):
            time.sleep(0.001)
            raise queue.Empty

        def update_once_8_steps_collected(rollouts):
            nxt, deadline = trainer.agent._spare, time.monotonic() + 60

            def ready_until_8_collected(*args, **kwargs):
                # The collector idles once 8 steps are in, however fast it ran.
                if nxt.steps_collected >= 8:
                    return nothing_ready()
                return wait_ready(*args, **kwargs)

            trainer.envs.wait_ready = ready_until_8_collected
            while nxt.steps_collected < 8 and time.monotonic() < deadline:
                time.sleep(0.005)
            try:
                return update(rollouts)
            finally:
                trainer.envs.wait_ready = wait_ready

        trainer.agent.updater.update = update_once_8_steps_collected
        trainer.learn(T * 3)
        overlapped = trainer.agent.rollouts.steps_collected
        assert 8 <= overlapped < T * 3
        trainer.collect_rollout()
        assert sum(tracker.counted) == T * 3
        assert tracker.counted[0] >= overlapped
    finally:
        trainer.envs.close()


@pytest.mark.multiproc
def test_overlapped_run_counts_every_step_once(out_dir):
    overrides = run_overrides(out_dir, 4) + [
        "habitat_baselines.rl.ver.overlap_rollouts_and_learn=True"
    ]
    trainer = execute_exp(get_config("gym/ver_cartpole", overrides), "train")
    assert trainer.num_updates_done == 4
    assert [sum(c) for c in trainer.env_steps_per_rollout] == [T * N] * 4
    assert trainer.num_steps_done == 4 * T * N


def _processes_in(folder) -> list:
    """Processes whose working directory is ``folder`` (the run's and its children's)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(folder):
                found.append(pid)
        except OSError:
            continue
    return found


@pytest.mark.multiproc
@pytest.mark.parametrize("module", ["habitat_ver.run", "habitat_baselines.run"])
def test_ctrl_c_stops_the_run_and_every_worker(module, tmp_path):
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        module,
        "--config-name=gym/ver_cartpole",
        *run_overrides(out, num_updates=100000),
    ]
    # An editable install shows Hydra our config path plugin only from the
    # repository folder (tests/hab/test_hab_data.py).
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    # stderr goes to a file: a pipe nobody reads fills up and blocks the run.
    with open(tmp_path / "stderr.txt", "w") as stderr:
        proc = subprocess.Popen(
            cmd,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=sigint_as_in_a_terminal,
            env=env,
        )
    try:
        deadline = time.monotonic() + 120
        while not (out / "checkpoints" / "resume-state.pth").exists():
            assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    err = (tmp_path / "stderr.txt").read_text()
    # One line, after the env workers were shut down; under upstream's command
    # too (it printed a KeyboardInterrupt traceback).
    (line,) = [ln for ln in err.splitlines() if ln.startswith(f"{module}: interrupted")]
    if module == "habitat_baselines.run":
        assert f"(resume state in {out / 'checkpoints'})" in line
    assert "Traceback" not in err
    # multiprocessing's forkserver exits when it sees its parent's pipe close;
    # give it a moment, then nothing of the run may remain.
    deadline = time.monotonic() + 10
    while _processes_in(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_in(tmp_path) == []
