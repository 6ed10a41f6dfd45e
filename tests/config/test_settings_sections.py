"""Components register their settings sections; the schema is composed from them."""

import pickle
from dataclasses import dataclass

import pytest
import torch
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from habitat_ver.common.checkpoint import load_checkpoint_file
from habitat_ver.common.settings_sections import (
    is_settings_section,
    register_settings_section,
    settings_section,
    settings_sections,
    unregister_settings_section,
)
from habitat_ver.config.compose import get_config
from habitat_ver.config.schema import baselines_schema, register_configs, rl_schema
from habitat_ver.trainers.appo_settings import AppoConfig
from habitat_ver.trainers.ver_settings import HabitatVerVERConfig

HB = "habitat_baselines."


@dataclass
class ToySection:
    """A component's settings (toy)."""

    # Widgets per env, >= 1.
    widgets: int = 3
    # Widget colour.
    colour: str = "red"


@pytest.fixture
def toy_sections():
    register_settings_section("toy", ToySection)
    register_settings_section("rl.toy", ToySection)
    register_configs()
    yield
    unregister_settings_section("toy")
    unregister_settings_section("rl.toy")
    register_configs()


def test_the_schema_holds_the_registered_sections_in_order():
    assert list(settings_sections()) == [
        "embedded_env",
        "progress",
        "ver_system",
        "ver_policy",
        "distrib_preemption",
        "env_workers",
        "learner",
        "returns",
    ]
    assert settings_sections("rl") == {"ver": HabitatVerVERConfig, "appo": AppoConfig}
    config = get_config("gym/ver_cartpole")
    assert OmegaConf.get_type(config.habitat_baselines) is baselines_schema()
    assert OmegaConf.get_type(config.habitat_baselines.rl) is rl_schema()
    assert OmegaConf.get_type(config.habitat_baselines.rl.appo) is AppoConfig
    assert config.habitat_baselines.rl.max_nonfinite_rewards == 100
    assert settings_section("rl.appo") is AppoConfig
    assert is_settings_section("habitat_ver.trainers.appo_settings.AppoConfig")
    assert not is_settings_section("habitat_ver.trainers.appo.AppoTrainer")


def test_a_registered_section_joins_the_schema_without_editing_config(toy_sections):
    config = get_config("gym/ver_cartpole", [HB + "toy.widgets=5", HB + "rl.toy.colour=blue"])
    assert config.habitat_baselines.toy == {"widgets": 5, "colour": "red"}
    assert config.habitat_baselines.rl.toy == {"widgets": 3, "colour": "blue"}
    assert OmegaConf.get_type(config.habitat_baselines.toy) is ToySection
    assert config.habitat_baselines.rl.appo == OmegaConf.structured(AppoConfig)
    with pytest.raises(ConfigCompositionException, match="habitat_baselines.toy.widgets=many"):
        get_config("gym/ver_cartpole", [HB + "toy.widgets=many"])


def test_the_same_sections_give_the_same_schema_classes_again(toy_sections):
    with_toy = baselines_schema()
    unregister_settings_section("toy")
    unregister_settings_section("rl.toy")
    without = baselines_schema()
    assert without is not with_toy
    register_settings_section("toy", ToySection)
    register_settings_section("rl.toy", ToySection)
    assert baselines_schema() is with_toy


def test_a_composed_config_pickles_by_name():
    config = get_config("gym/appo_cartpole")
    again = pickle.loads(pickle.dumps(config))
    assert again == config
    assert OmegaConf.get_type(again.habitat_baselines.rl) is rl_schema()


def test_an_upstream_format_checkpoint_of_our_schema_loads(tmp_path):
    # upstream's trainers pickle the config itself: the registered sections,
    # kept beside their components, are config records the loader accepts.
    config = get_config("gym/appo_cartpole", [HB + "rl.appo.max_policy_lag=7"])
    path = tmp_path / "upstream.pth"
    torch.save({"state_dict": {"w": torch.ones(2)}, "config": config}, str(path))
    loaded = load_checkpoint_file(str(path))
    assert loaded["config"].habitat_baselines.rl.appo.max_policy_lag == 7


@dataclass
class NotDDPPOConfig:
    """Replaces upstream's rl.ddppo without extending it (refused)."""

    # Anything.
    x: int = 0


def test_the_registry_refuses_what_it_cannot_compose():
    with pytest.raises(ValueError, match="already registered to AppoConfig"):
        register_settings_section("rl.appo", ToySection)
    with pytest.raises(ValueError, match=r"key 'ppo\.toy' is not allowed"):
        register_settings_section("ppo.toy", ToySection)
    with pytest.raises(ValueError, match="must be a dataclass"):
        register_settings_section("toy", dict)
    with pytest.raises(KeyError, match="no settings section registered under 'rl.nothing'"):
        settings_section("rl.nothing")
    register_settings_section("rl.ddppo", NotDDPPOConfig)
    try:
        refused = r"'rl\.ddppo' \(NotDDPPOConfig\) replaces upstream's DDPPOConfig"
        with pytest.raises(ValueError, match=refused):
            rl_schema()
    finally:
        unregister_settings_section("rl.ddppo")
    assert "ddppo" not in settings_sections("rl")
