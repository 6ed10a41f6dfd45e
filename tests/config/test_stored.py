"""A checkpoint's stored config cannot choose code to run."""

import pytest
from omegaconf import OmegaConf

from habitat_ver.common.checkpoint import plain_to_config
from habitat_ver.config.stored import UntrustedConfigError, with_current_code

FACTORY = "habitat_ver.envs.factory.VerVectorEnvFactory"


def _current():
    return OmegaConf.create(
        {
            "habitat": {"env_task_gym_dependencies": ["habitat_ver.envs"]},
            "habitat_baselines": {
                "vector_env_factory": {"_target_": FACTORY},
                "evaluator": {
                    "_target_": "habitat_baselines.rl.ppo.habitat_evaluator.HabitatEvaluator"
                },
                "rl": {"ppo": {"lr": 1e-3}},
            },
        }
    )


def _stored(**baselines):
    plain = OmegaConf.to_container(_current())
    plain["habitat_baselines"].update(baselines)
    plain["habitat_baselines"]["rl"]["ppo"]["lr"] = 5e-4
    plain["habitat"]["env_task_gym_dependencies"] = ["antigravity"]
    return plain_to_config(plain)  # as load_checkpoint_file returns it


def test_stored_targets_and_imports_are_replaced_by_the_current_ones(tmp_path):
    attack = {"_target_": "builtins.open", "file": str(tmp_path / "victim"), "mode": "w"}
    stored = _stored(vector_env_factory=attack)
    config = with_current_code(stored, _current())
    assert OmegaConf.to_container(config.habitat_baselines.vector_env_factory) == {
        "_target_": FACTORY
    }
    assert list(config.habitat.env_task_gym_dependencies) == ["habitat_ver.envs"]
    # Everything else is the stored config's, and the input is untouched.
    assert config.habitat_baselines.rl.ppo.lr == 5e-4
    assert stored.habitat_baselines.vector_env_factory._target_ == "builtins.open"
    assert OmegaConf.is_readonly(config)


def test_target_nested_in_a_list_is_replaced_too():
    current = _current()
    current.habitat_baselines.callbacks = [{"_target_": "math.floor", "x": 1}]
    stored = _stored(callbacks=[{"_target_": "shutil.rmtree", "path": "/"}])
    config = with_current_code(stored, current)
    assert config.habitat_baselines.callbacks[0]._target_ == "math.floor"
    assert config.habitat_baselines.callbacks[0].x == 1


def test_target_where_the_current_config_has_none_is_refused_by_name():
    stored = _stored(extra_hook={"_target_": "shutil.rmtree", "path": "/"})
    with pytest.raises(
        UntrustedConfigError,
        match=r"habitat_baselines.extra_hook._target_='shutil.rmtree'.*"
        r"load_resume_state_config=False",
    ):
        with_current_code(stored, _current())


@pytest.mark.parametrize(
    "key, bad",
    [
        ("env_task_gym_id", "antigravity:CartPole-v1"),
        ("scenarios", ["CartPole-v1", "antigravity:CartPole-v1"]),
    ],
)
def test_gym_id_naming_a_module_is_refused_unless_the_current_config_names_it(key, bad):
    current = _current()
    current.habitat.env_task_gym_id = "CartPole-v1"
    current.habitat_baselines.embedded_env = {"scenarios": []}
    stored = OmegaConf.to_container(current)
    if key == "scenarios":
        stored["habitat_baselines"]["embedded_env"]["scenarios"] = bad
    else:
        stored["habitat"][key] = bad
    stored = plain_to_config(stored)
    with pytest.raises(UntrustedConfigError, match="antigravity:CartPole-v1.*import"):
        with_current_code(stored, current)
    # The same id chosen by this run's own config is this run's choice.
    if key == "scenarios":
        current.habitat_baselines.embedded_env.scenarios = bad
    else:
        current.habitat[key] = bad
    with_current_code(stored, current)
