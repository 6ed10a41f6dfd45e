"""The scheduler: the learner takes the idle cores during lock-step updates,
only then, and only the cores no other program uses (a multi-threaded update
beside a neighbour's multi-threaded torch can take many times one thread's:
docs/BENCHMARKS.md, "Defaults under contention"); VER's settle wait before an
update is bounded by what the extra threads save."""

import pytest
import torch

import habitat_ver.system.scheduling as scheduling_module
from habitat_ver.system.scheduling import (
    check_learner_threads,
    COLLAPSE_FACTOR,
    COOLDOWN_UPDATES,
    SETTLE_PAUSE_UPDATES,
    SETTLE_SHARE,
    LearnerThreads,
    Scheduler,
    ThreadChoice,
    choose_threads,
    collapsed,
    cores_per_process,
    other_runnable,
    parse_setting,
)
from habitat_ver.config.compose import get_config
from habitat_ver.config.validate import ConfigError
from habitat_ver.run import execute_exp

from .conftest import run_overrides, tensorboard_scalars

CPU = torch.device("cpu")


@pytest.fixture
def one_thread_two_cores(monkeypatch):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch.setattr(scheduling_module, "cores_per_process", lambda: 2)
    monkeypatch.setattr(scheduling_module, "usable_cores", lambda: 2)
    monkeypatch.setattr(scheduling_module, "local_processes", lambda: 1)
    yield
    torch.set_num_threads(before)


def _reads(*counts):
    """A runnable-count reader returning ``counts`` in turn (this thread included)."""
    values = iter(counts)
    return lambda: next(values)


# ------------------------------------------------------------- the decision
@pytest.mark.parametrize(
    "share, cores, others, own_others, cooldown, threads, kind",
    [
        (1, 2, 0, 0, 0, 1, "one_core"),  # 2 ranks on 2 cores: one each
        (2, 2, 0, 0, 0, 2, "idle"),  # quiet 2-core machine: both cores
        (2, 2, 1, 0, 0, 1, "busy"),  # one other runnable thread: 2 - 1 = 1 core free
        (2, 2, 2, 0, 0, 1, "busy"),  # the neighbour's 2 matmul threads
        (8, 8, 3, 0, 0, 5, "busy"),  # 8 - 3 = 5 cores free
        (8, 8, 0, 0, 0, 8, "idle"),
        # 2 ranks x 2 threads on 4 cores: the other rank's update (2) is not a stranger,
        (2, 4, 2, 2, 0, 2, "idle"),
        # but one more runnable thread is: 4 - (3 - 2) = 3 free, the share (2) fits.
        (2, 4, 3, 2, 0, 2, "idle"),
        (2, 4, 5, 2, 0, 1, "busy"),  # 4 - (5 - 2) = 1 free
        (2, 2, 0, 0, 3, 1, "collapsed"),  # still cooling down after a collapse
    ],
)
def test_auto_takes_only_the_cores_nobody_else_uses(
    share, cores, others, own_others, cooldown, threads, kind
):
    choice = choose_threads(share, cores, others, own_others, cooldown)
    assert (choice.threads, choice.kind) == (threads, kind)


@pytest.mark.parametrize(
    "threads, seconds, best_single, best_multi, expected",
    [
        (1, 19.7, 0.65, 0.95, False),  # one thread never "collapses": it is the floor
        (2, 12.25, 0.65, 0.95, True),  # issue 29's update beside a neighbour
        (2, 0.95, 1.30, 0.95, False),  # the quiet gain: 0.95 s on 2 threads, 1.30 on 1
        (2, 1.31, 1.30, 0.95, True),  # slower than one thread was
        (2, 6.37, None, 0.95, True),  # no one-thread time yet: 6.37 > 2.0 x 0.95
        (2, 1.85, None, 0.95, False),  # 1.85 < 2.0 x 0.95 = 1.90: update-to-update noise
        (2, 3.00, None, None, False),  # the first update: nothing to compare with
    ],
)
def test_a_collapse_is_a_multi_threaded_update_slower_than_before(
    threads, seconds, best_single, best_multi, expected
):
    assert COLLAPSE_FACTOR == 2.0
    assert collapsed(threads, seconds, best_single, best_multi) is expected


def test_the_fewest_runnable_threads_seen_count():
    # Five reads of /proc/loadavg's runnable count, this thread included:
    # min(3, 2, 4, 2, 5) - 1 = 1 other runnable thread (a blip of 4 does not count).
    assert other_runnable(_reads(3, 2, 4, 2, 5), samples=5, gap_s=0) == 1
    assert other_runnable(_reads(1, 1, 1), samples=3, gap_s=0) == 0
    assert other_runnable(lambda: None, samples=3, gap_s=0) == 0  # no /proc: assume free


@pytest.mark.parametrize("value, fixed", [("auto", None), ("AUTO", None), (1, 1), (3, 3)])
def test_the_setting_is_auto_or_a_count(value, fixed):
    assert parse_setting(value) == fixed


@pytest.mark.parametrize("value", [0, -1, True, "two", 1.5])
def test_other_settings_are_refused(value):
    with pytest.raises(ValueError, match="num_threads=.*'auto' or an integer >= 1"):
        parse_setting(value)


def test_validation_names_the_key():
    config = get_config("gym/ddppo_cartpole", ["habitat_baselines.learner.num_threads=0"])
    with pytest.raises(ConfigError, match=r"learner.num_threads=0 is not allowed: 'auto' or"):
        check_learner_threads(config)


def test_after_a_collapse_one_thread_for_the_cooldown(one_thread_two_cores):
    threads = LearnerThreads("auto", read_runnable=lambda: 1)  # only this thread runs
    assert threads.next_choice() == ThreadChoice(2, "the cores are idle", "idle")
    threads.record(2, 3.10)  # first update (warm-up): nothing to compare with
    threads.record(2, 0.95)
    threads.record(2, 0.96)
    assert threads.cooldown_left == 0
    threads.record(2, 12.25)  # > 2.0 x 0.95
    assert threads.cooldown_left == COOLDOWN_UPDATES == 10
    for _ in range(COOLDOWN_UPDATES):
        assert threads.next_choice().threads == 1
        threads.record(1, 0.65)
    assert threads.next_choice().threads == 2
    threads.record(2, 0.70)  # beats one thread's 0.65? no: 0.70 > 0.65
    assert threads.cooldown_left == COOLDOWN_UPDATES


def test_a_fixed_count_is_kept_whatever_the_load(one_thread_two_cores):
    threads = LearnerThreads(2, read_runnable=lambda: 9)
    threads.record(2, 0.95)
    threads.record(2, 12.25)
    assert threads.cooldown_left == 0
    assert threads.next_choice() == ThreadChoice(
        2, "habitat_baselines.learner.num_threads=2", "fixed"
    )


@pytest.mark.parametrize(
    "setting, runnable, envs_idle, device, inside",
    [
        ("auto", 1, True, CPU, 2),  # idle machine, lock-step: both cores
        ("auto", 3, True, CPU, 1),  # a neighbour with 2 runnable threads: one
        ("auto", 1, False, CPU, 1),  # envs step while learning (overlap, appo)
        ("auto", 1, True, torch.device("cuda"), 1),  # the GPU learns
        (1, 1, True, CPU, 1),
        (2, 9, True, CPU, 2),
    ],
)
def test_threads_inside_and_after_the_block(
    one_thread_two_cores, setting, runnable, envs_idle, device, inside
):
    threads = LearnerThreads(setting, read_runnable=lambda: runnable)
    with threads.update(envs_idle, device):
        assert torch.get_num_threads() == inside
    assert torch.get_num_threads() == 1
    assert threads.last_threads == inside


def test_a_process_gets_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(scheduling_module.os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "3")
    assert cores_per_process() == 2
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "16")
    assert cores_per_process() == 1
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert cores_per_process() == 8


# ------------------------------------------------- the wait before learning
def _settle_recording(arrived: bool):
    """A settle wait that records the caps it is given and says ``arrived``."""
    caps = []
    return caps, lambda cap: caps.append(cap) or arrived


def test_before_learning_the_wait_is_a_share_of_the_last_update_and_the_gain(
    one_thread_two_cores,
):
    scheduler = Scheduler("auto", read_runnable=lambda: 1)
    caps, settle = _settle_recording(True)
    # No gain known yet: a quarter of the last update's 4.0 s, 1.0 s.
    assert SETTLE_SHARE == 0.25
    waited = scheduler.before_learn(5, CPU, True, 4.0, settle)
    assert caps == [1.0] and waited >= 0.0
    # Learning on 2 threads saved 3.5 - 3.0 = 0.5 s so far: no longer than that.
    scheduler.threads.record(1, 3.5)
    scheduler.threads.record(2, 3.0)
    scheduler.before_learn(6, CPU, True, 4.0, settle)
    assert caps[-1] == pytest.approx(0.5)
    assert scheduler.settle_resumes_at == 0


def test_a_wait_that_runs_out_pauses_waiting(one_thread_two_cores):
    scheduler = Scheduler("auto", read_runnable=lambda: 1)
    caps, settle = _settle_recording(False)  # a straggler still stepping
    scheduler.before_learn(3, CPU, True, 4.0, settle)
    assert SETTLE_PAUSE_UPDATES == 20
    assert scheduler.settle_resumes_at == 23
    assert scheduler.before_learn(22, CPU, True, 4.0, settle) == 0.0
    assert len(caps) == 1
    scheduler.before_learn(23, CPU, True, 4.0, settle)
    assert len(caps) == 2


@pytest.mark.parametrize(
    "setting, envs_idle, device, last_learn_s",
    [
        ("auto", False, CPU, 4.0),  # the envs step while learning (overlap)
        ("auto", True, torch.device("cuda"), 4.0),  # the GPU learns
        (1, True, CPU, 4.0),  # one thread whatever the cores: nothing to gain
        ("auto", True, CPU, 0.0),  # the first update: no learning time yet
    ],
)
def test_no_wait_where_the_learner_would_not_take_the_cores(
    one_thread_two_cores, setting, envs_idle, device, last_learn_s
):
    scheduler = Scheduler(setting, read_runnable=lambda: 1)
    caps, settle = _settle_recording(True)
    assert scheduler.before_learn(0, device, envs_idle, last_learn_s, settle) == 0.0
    assert scheduler.before_learn(0, CPU, True, 4.0, None) == 0.0  # nothing in flight
    assert caps == []


# ------------------------------------------------------------- in a trainer
@pytest.mark.parametrize(
    "config, extra, during",
    [
        ("gym/ddppo_cartpole", [], [2, 2]),
        ("gym/ver_cartpole", [], [2, 2]),
        ("gym/ver_cartpole", ["habitat_baselines.learner.num_threads=1"], [1, 1]),
        ("gym/ver_cartpole", ["habitat_baselines.rl.ver.overlap_rollouts_and_learn=True"], [1, 1]),
    ],
)
def test_lock_step_updates_learn_on_the_idle_cores(
    one_thread_two_cores, monkeypatch, out_dir, config, extra, during
):
    from habitat_ver.updaters.ppo import PPOUpdater

    # The machine looks idle whatever else runs beside the test.
    monkeypatch.setattr(scheduling_module, "runnable_now", lambda: 1)
    seen = []
    update = PPOUpdater.update

    def counting_update(self, rollouts):
        seen.append(torch.get_num_threads())
        return update(self, rollouts)

    monkeypatch.setattr(PPOUpdater, "update", counting_update)
    execute_exp(get_config(config, run_overrides(out_dir, 2) + extra), "train")
    assert seen == during
    assert torch.get_num_threads() == 1
    assert tensorboard_scalars(out_dir / "tb")["system/learner_threads"] == during


def test_a_busy_machine_learns_on_one_thread(one_thread_two_cores, monkeypatch, out_dir):
    from habitat_ver.updaters.ppo import PPOUpdater

    # Two runnable threads besides this one: a neighbour's 2-thread matmuls.
    monkeypatch.setattr(scheduling_module, "runnable_now", lambda: 3)
    seen = []
    update = PPOUpdater.update
    monkeypatch.setattr(
        PPOUpdater,
        "update",
        lambda self, rollouts: seen.append(torch.get_num_threads()) or update(self, rollouts),
    )
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(out_dir, 2)), "train")
    assert seen == [1, 1]


@pytest.mark.parametrize("single", [True, False])
def test_on_the_cpu_the_trainer_itself_collects_on_one_thread(out_dir, single):
    # `python -m habitat_baselines.run` builds the trainer through upstream's
    # execute_exp, which applies force_torch_single_threaded (default False)
    # only with CUDA; on the CPU the env workers need the cores either way.
    from habitat_baselines.common.baseline_registry import baseline_registry

    config = get_config(
        "gym/ver_cartpole",
        run_overrides(out_dir, 2) + [f"habitat_baselines.force_torch_single_threaded={single}"],
    )
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        baseline_registry.get_trainer("ver")(config)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_the_multi_thread_gain_is_known_once_both_kinds_of_update_were_seen():
    threads = LearnerThreads("auto", read_runnable=lambda: 1)
    threads.record(1, 4.0)
    assert threads.multi_thread_gain() is None
    threads.record(2, 2.5)
    threads.record(1, 3.5)
    assert threads.multi_thread_gain() == pytest.approx(1.0)  # fastest 3.5 - fastest 2.5
