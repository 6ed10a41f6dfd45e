"""validate(): each bad value is one ConfigError naming key, value and what is allowed."""

import re

import pytest

from habitat_ver.config.compose import get_config
from habitat_ver.config.validate import ConfigError, validate

PPO = "habitat_baselines.rl.ppo."
OVERLAP = "habitat_baselines.rl.ver.overlap_rollouts_and_learn"

BAD = [
    # (config, override, the message's start, what it says is allowed)
    ("ddppo", PPO + "lr=0", PPO + "lr=0.0 ", "finite number > 0"),
    ("ddppo", PPO + "lr=nan", PPO + "lr=nan ", "finite number > 0"),
    ("ddppo", PPO + "clip_param=-1", PPO + "clip_param=-1.0 ", "(0, 1]"),
    ("ddppo", PPO + "gamma=1.5", PPO + "gamma=1.5 ", "[0, 1]"),
    ("ddppo", PPO + "hidden_size=0", PPO + "hidden_size=0 ", "integer >= 1"),
    (
        "ver",
        "habitat_baselines.rl.ddppo.num_recurrent_layers=0",
        "habitat_baselines.rl.ddppo.num_recurrent_layers=0 ",
        "integer >= 1",
    ),
    (
        "ddppo",
        "habitat_baselines.ver_system.min_batch_fraction=2",
        "habitat_baselines.ver_system.min_batch_fraction=2.0 ",
        "(0, 1]",
    ),
    (
        "ver",
        "habitat_baselines.rl.ver.min_batch_fraction=0",
        "habitat_baselines.rl.ver.min_batch_fraction=0.0 ",
        "(0, 1]",
    ),
    (
        "ver",
        "habitat_baselines.rl.ver.max_wait_ms=-1",
        "habitat_baselines.rl.ver.max_wait_ms=-1.0 ",
        ">= 0",
    ),
    (
        "ddppo",
        "habitat_baselines.ver_system.max_wait_ms=-5",
        "habitat_baselines.ver_system.max_wait_ms=-5.0 ",
        ">= 0",
    ),
    (
        "ver",
        "habitat_baselines.rl.ver.num_inference_workers=-3",
        "habitat_baselines.rl.ver.num_inference_workers=-3 ",
        "integer >= 1",
    ),
    ("ddppo", "+" + PPO + "lrr=1", PPO + "lrr=1 ", "not a key of PPOConfig (did you mean 'lr'?)"),
    ("ddppo", "+habitat.foo={a: 1}", "habitat.foo={'a': 1} ", "not a key of HabitatConfig"),
    # 8 envs: lock-step minibatches hold whole envs.
    (
        "ddppo",
        PPO + "num_mini_batch=9",
        PPO + "num_mini_batch=9 ",
        "at most habitat_baselines.num_environments=8",
    ),
    # 32 steps x 8 envs = 256 steps per rollout.
    (
        "ver",
        PPO + "num_mini_batch=100000",
        PPO + "num_mini_batch=100000 ",
        "a divisor of the 256 steps",
    ),
    ("ver", PPO + "num_mini_batch=3", PPO + "num_mini_batch=3 ", "a divisor of the 256 steps"),
    (
        "ver",
        "habitat_baselines.rl.policy.main_agent.name=VERPolicy",
        "habitat_baselines.rl.ddppo.rnn_type='none' ",
        "one of GRU, LSTM (any case) with rl.policy.main_agent.name=VERPolicy",
    ),
    (
        "ddppo",
        "habitat_baselines.rl.ddppo.rnn_type=GRUU",
        "habitat_baselines.rl.ddppo.rnn_type='GRUU' ",
        "one of GRU, LSTM, none (any case) with rl.policy.main_agent.name=CompactPolicy",
    ),
    (
        "appo",
        "habitat_baselines.rl.policy.main_agent.name=NoSuchPolicy",
        "habitat_baselines.rl.policy.main_agent.name='NoSuchPolicy' ",
        "not a registered policy; registered: ['CompactPolicy', ",
    ),
    # Keys a trainer would otherwise ignore.
    (
        "ver",
        PPO + "use_double_buffered_sampler=True",
        PPO + "use_double_buffered_sampler=True ",
        "False for trainer 'ver'",
    ),
    (
        "appo",
        PPO + "use_double_buffered_sampler=True",
        PPO + "use_double_buffered_sampler=True ",
        "False for trainer 'appo'",
    ),
    ("appo", PPO + "use_gae=False", PPO + "use_gae=False ", "True for trainer 'appo'"),
    (
        "ddppo",
        "habitat_baselines.rl.ver.overlap_rollouts_and_learn=True",
        "habitat_baselines.rl.ver.overlap_rollouts_and_learn=True ",
        "False for trainer 'ddppo'",
    ),
    (
        "ddppo",
        OVERLAP + "=auto",
        OVERLAP + "='auto' ",
        "False for trainer 'ddppo'",
    ),
    ("ver", OVERLAP + "=sometimes", OVERLAP + "='sometimes' ", "True, False or auto"),
    (
        "ver",
        "habitat_baselines.rl.appo.batch_trajectories=8",
        "habitat_baselines.rl.appo.batch_trajectories=8 ",
        "0 (the default) for trainer 'ver': rl.appo is read by the appo trainer only",
    ),
    (
        "appo",
        "habitat_baselines.updater_name=DDPPO",
        "habitat_baselines.updater_name='DDPPO' ",
        "PPOUpdater (or a subclass) for trainer 'appo'",
    ),
]


@pytest.mark.parametrize("trainer, override, start, allowed", BAD, ids=[case[1] for case in BAD])
def test_bad_value_is_one_error_naming_key_value_and_what_is_allowed(
    trainer, override, start, allowed
):
    config = get_config(f"gym/{trainer}_cartpole", [override])
    with pytest.raises(ConfigError) as raised:
        validate(config)
    message = str(raised.value)
    assert message.startswith(start + "is not allowed: "), message
    assert allowed in message and "\n" not in message


@pytest.mark.parametrize(
    "trainer, overrides",
    [
        ("ddppo", [PPO + "num_mini_batch=8", PPO + "gamma=1", PPO + "clip_param=1"]),
        # ddppo honours what ver and appo refuse.
        ("ddppo", [PPO + "use_double_buffered_sampler=True", PPO + "use_gae=False"]),
        ("ver", [PPO + "use_gae=False", OVERLAP + "=True"]),
        ("appo", [PPO + "use_adaptive_entropy_pen=True", PPO + "use_linear_clip_decay=True"]),
        (
            "ver",
            [
                PPO + "num_mini_batch=256",
                "habitat_baselines.rl.ddppo.rnn_type=LSTM",
                "habitat_baselines.rl.policy.main_agent.name=VERPolicy",
            ],
        ),
    ],
)
def test_values_at_the_limits_are_accepted(trainer, overrides):
    validate(get_config(f"gym/{trainer}_cartpole", overrides))


HB = "habitat_baselines."


@pytest.mark.parametrize(
    "overrides, start, allowed",
    [
        # ddppo_cartpole: total_num_steps=300000, num_checkpoints=5, the others -1.
        # 0 checkpoints divided by zero after the first update (upstream's schedule).
        ([HB + "num_checkpoints=0"], HB + "num_checkpoints=0 ", "an integer >= 1"),
        (
            [HB + "num_checkpoints=-1", HB + "checkpoint_interval=0"],
            HB + "checkpoint_interval=0 ",
            "integer >= 1 (updates)",
        ),
        ([HB + "total_num_steps=0"], HB + "total_num_steps=0.0 ", "a number > 0"),
        (
            [HB + "total_num_steps=-1", HB + "num_updates=0"],
            HB + "num_updates=0 ",
            "num_updates (an integer >= 1)",
        ),
        ([HB + "log_interval=0"], HB + "log_interval=0 ", "an integer >= 1 (updates)"),
        (
            [HB + "rl.preemption.save_resume_state_interval=0"],
            HB + "rl.preemption.save_resume_state_interval=0 ",
            "an integer >= 1 (updates)",
        ),
        (
            [HB + "checkpoint_interval=10"],
            HB + "num_checkpoints=5 ",
            "with habitat_baselines.checkpoint_interval=10: set exactly one",
        ),
        (
            [HB + "total_num_steps=-1"],
            HB + "num_updates=-1 ",
            "with habitat_baselines.total_num_steps=-1.0: set exactly one",
        ),
    ],
)
def test_run_length_checkpoint_schedule_and_update_intervals_are_checked(overrides, start, allowed):
    config = get_config("gym/ddppo_cartpole", overrides)
    with pytest.raises(ConfigError) as raised:
        validate(config)
    message = str(raised.value)
    assert message.startswith(start + "is not allowed: "), message
    assert allowed in message and "\n" not in message


def test_either_key_of_each_schedule_pair_is_accepted():
    validate(get_config("gym/ddppo_cartpole", [HB + "total_num_steps=1.0e4"]))
    validate(
        get_config(
            "gym/ddppo_cartpole",
            [
                HB + "total_num_steps=-1",
                HB + "num_updates=7",
                HB + "num_checkpoints=-1",
                HB + "checkpoint_interval=3",
            ],
        )
    )


def test_unknown_scenario_is_named_under_the_scenarios_key_with_a_close_id():
    config = get_config(
        "doom/ddppo_mixed_stragglers",
        ["habitat_baselines.embedded_env.scenarios=[habitat_ver/DoomMyWayHom-v0]"],
    )
    with pytest.raises(ConfigError) as raised:
        validate(config)
    message = str(raised.value)
    assert message.startswith(
        "habitat_baselines.embedded_env.scenarios names 'habitat_ver/DoomMyWayHom-v0', "
        "which is not a registered gym id; did you mean 'habitat_ver/DoomMyWayHome-v0'?"
    ), message


@pytest.mark.parametrize(
    "trainer, overrides, start",
    [
        ("appo", [], "habitat_baselines.trainer_name='appo' "),
        ("ver", ["habitat_baselines.evaluate=True"], "habitat_baselines.evaluate=True "),
    ],
)
def test_appo_and_evaluation_are_refused_on_several_ranks(
    trainer, overrides, start, monkeypatch, tmp_path
):
    overrides = overrides + [f"habitat_baselines.eval_ckpt_path_dir={tmp_path}"]
    config = get_config(f"gym/{trainer}_cartpole", overrides)
    validate(config)  # one process: fine
    # What torchrun gives each of its 2 processes. Both used to start their
    # envs and then fail with a traceback (upstream's for evaluation).
    for name, value in (("LOCAL_RANK", "1"), ("RANK", "1"), ("WORLD_SIZE", "2")):
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as raised:
        validate(config)
    assert str(raised.value).startswith(start + "is not allowed: ")
    assert "this process is one of 2 ranks (torchrun or SLURM tasks)" in str(raised.value)


def test_a_policy_registered_by_a_gym_dependency_is_accepted(tmp_path, monkeypatch):
    # A user's module, listed in habitat.env_task_gym_dependencies, registers
    # a policy: the dependencies are imported before the policy name is checked.
    (tmp_path / "my_policies.py").write_text(
        "from habitat_baselines.common.baseline_registry import baseline_registry\n"
        "from habitat_ver.policies.compact_policy import CompactPolicy\n\n\n"
        "@baseline_registry.register_policy\n"
        "class MyCompactPolicy(CompactPolicy):\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = get_config(
        "gym/ver_cartpole",
        [
            "habitat_baselines.rl.policy.main_agent.name=MyCompactPolicy",
            "habitat.env_task_gym_dependencies=[habitat_ver.envs,my_policies]",
        ],
    )
    validate(config)


def test_a_subclass_of_our_trainer_is_checked_as_its_base():
    # Checks keyed on the name "ver" skipped a user's registered subclass:
    # a traceback from the storage instead of this error.
    from habitat_baselines.common.baseline_registry import baseline_registry

    from habitat_ver.trainers.ver import VERTrainer

    if baseline_registry.get_trainer("test_my_ver") is None:

        @baseline_registry.register_trainer(name="test_my_ver")
        class MyVERTrainer(VERTrainer):
            pass

    config = get_config(
        "gym/ver_cartpole",
        ["habitat_baselines.trainer_name=test_my_ver", "habitat_baselines.rl.ppo.num_mini_batch=3"],
    )
    with pytest.raises(ConfigError, match=r"num_mini_batch=3 .*a divisor of the"):
        validate(config)


def test_a_trainers_own_checks_are_its_check_config():
    # validate() finds them through the registered class: a new trainer adds
    # its checks without a branch on its name in config/.
    from habitat_baselines.common.baseline_registry import baseline_registry

    from habitat_ver.config.errors import check
    from habitat_ver.trainers.ddppo import DDPPOTrainer

    if baseline_registry.get_trainer("test_even_ddppo") is None:

        @baseline_registry.register_trainer(name="test_even_ddppo")
        class EvenDDPPOTrainer(DDPPOTrainer):
            @classmethod
            def check_config(cls, config):
                super().check_config(config)
                envs = config.habitat_baselines.num_environments
                check(envs % 2 == 0, "habitat_baselines.num_environments", envs, "an even number")

    name = "habitat_baselines.trainer_name=test_even_ddppo"
    with pytest.raises(ConfigError, match=r"^habitat_baselines.num_environments=3 .*an even"):
        validate(get_config("gym/ddppo_cartpole", [name, "habitat_baselines.num_environments=3"]))
    # ddppo's own checks still apply (through super()).
    with pytest.raises(ConfigError, match=r"num_mini_batch=9 .*at most habitat_baselines"):
        validate(get_config("gym/ddppo_cartpole", [name, PPO + "num_mini_batch=9"]))


def test_upstreams_trainer_gets_none_of_our_trainers_checks():
    # upstream_ddppo has no check_config: its minibatches are not ours to limit.
    config = get_config(
        "gym/ddppo_cartpole",
        ["habitat_baselines.trainer_name=upstream_ddppo", PPO + "num_mini_batch=9"],
    )
    validate(config)


@pytest.mark.parametrize(
    "config_name, overrides",
    [
        # 8 envs in training; one env per scene in evaluation.
        ("gym/ddppo_cartpole", [HB + "num_environments=1", PPO + "num_mini_batch=2"]),
        ("gym/ver_cartpole", [HB + "num_environments=1", PPO + "num_mini_batch=3"]),
        ("gym/appo_cartpole", [HB + "num_environments=1", HB + "rl.appo.num_rollout_workers=4"]),
        ("gym/ddppo_cartpole", [PPO + "gamma=1.5", HB + "distrib_preemption.policy=ver"]),
        ("gym/ver_cartpole", [OVERLAP + "=sometimes", PPO + "use_double_buffered_sampler=True"]),
    ],
)
def test_training_only_checks_are_skipped_under_evaluation(config_name, overrides, tmp_path):
    # `habitat_baselines.num_environments=1` alone used to be refused for
    # num_mini_batch=2 ("at most habitat_baselines.num_environments=1 for
    # ddppo") although nothing trains.
    evaluation = [HB + "evaluate=True", f"{HB}eval_ckpt_path_dir={tmp_path}"]
    with pytest.raises(ConfigError, match=r"^habitat_baselines\.(rl\.|distrib)"):
        validate(get_config(config_name, overrides))
    validate(get_config(config_name, overrides + evaluation))


def test_what_evaluation_builds_is_still_checked_under_evaluation(tmp_path):
    evaluation = [HB + "evaluate=True", f"{HB}eval_ckpt_path_dir={tmp_path}"]
    for override, start in (
        (HB + "num_environments=0", HB + "num_environments=0 "),
        (PPO + "hidden_size=0", PPO + "hidden_size=0 "),
        (PPO + "eps=-1", PPO + "eps=-1.0 "),
        (HB + "total_num_steps=-1", HB + "num_updates=-1 "),
    ):
        with pytest.raises(ConfigError, match=f"^{re.escape(start)}is not allowed: "):
            validate(get_config("gym/ddppo_cartpole", [override] + evaluation))
