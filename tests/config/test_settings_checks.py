"""Components register the checks of their settings; validate runs them."""

import pytest

from habitat_ver.config.compose import get_config
from habitat_ver.config.errors import ConfigError, check
from habitat_ver.config.settings_checks import (
    register_settings_check,
    settings_checks,
    unregister_settings_check,
)
from habitat_ver.config.validate import training_checks, validate

HB = "habitat_baselines."


def _refuse_many_envs(config):
    envs = config.habitat_baselines.num_environments
    check(envs <= 4, "habitat_baselines.num_environments", envs, "at most 4 (toy component)")


@pytest.fixture
def toy_check(request):
    training = request.param
    register_settings_check("toy envs", _refuse_many_envs, training=training)
    yield training
    unregister_settings_check("toy envs")


@pytest.mark.parametrize("toy_check", [False, True], indirect=True)
def test_validate_runs_a_registered_check(toy_check):
    assert _refuse_many_envs in settings_checks(training=toy_check)
    assert _refuse_many_envs not in settings_checks(training=not toy_check)
    config = get_config("gym/ddppo_cartpole", [HB + "num_environments=8"])
    with pytest.raises(ConfigError, match=r"num_environments=8 is not allowed: at most 4"):
        validate(config)
    validate(get_config("gym/ddppo_cartpole", [HB + "num_environments=4"]))


@pytest.mark.parametrize("toy_check", [True], indirect=True)
def test_a_training_check_is_skipped_under_evaluation(toy_check, tmp_path):
    assert _refuse_many_envs in training_checks()
    checkpoint = tmp_path / "ckpt.0.pth"
    checkpoint.write_bytes(b"")
    config = get_config(
        "gym/ddppo_cartpole",
        [HB + "num_environments=8", HB + "evaluate=True", f"{HB}eval_ckpt_path_dir={checkpoint}"],
    )
    validate(config)


def test_the_builtin_components_register_their_checks():
    from habitat_ver.distributed.preemption_rule import check_preemption_policy
    from habitat_ver.trainers.ver_settings import check_ver_settings
    from habitat_ver.updaters.targets import check_return_estimator

    training = settings_checks(training=True)
    for component_check in (check_preemption_policy, check_ver_settings, check_return_estimator):
        assert component_check in training


def test_a_name_is_not_silently_taken_over():
    register_settings_check("toy envs", _refuse_many_envs)
    try:
        register_settings_check("toy envs", _refuse_many_envs)  # the same: fine
        with pytest.raises(ValueError, match="'toy envs' is already registered"):
            register_settings_check("toy envs", print)
    finally:
        unregister_settings_check("toy envs")
    assert _refuse_many_envs not in settings_checks(training=False)


def test_a_new_policy_names_its_recurrent_cores_itself():
    from habitat_baselines.common.baseline_registry import baseline_registry

    from habitat_ver.policies.compact_policy import CompactPolicy

    class GRUOnlyPolicy(CompactPolicy):
        RNN_TYPES = ("GRU",)

    policies = baseline_registry.mapping["policy"]
    policies["GRUOnlyPolicy"] = GRUOnlyPolicy
    try:
        name = [HB + "rl.policy.main_agent.name=GRUOnlyPolicy"]
        validate(get_config("gym/ddppo_cartpole", name + [HB + "rl.ddppo.rnn_type=gru"]))
        config = get_config("gym/ddppo_cartpole", name + [HB + "rl.ddppo.rnn_type=LSTM"])
        with pytest.raises(ConfigError, match=r"rnn_type='LSTM' is not allowed: one of GRU "):
            validate(config)
    finally:
        del policies["GRUOnlyPolicy"]
