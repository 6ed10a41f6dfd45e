"""Every config of our tree composes, and names only registered classes."""

import pytest
from habitat.core.registry import registry as habitat_registry
from habitat_baselines.common.baseline_registry import baseline_registry

from habitat_ver.config.compose import config_names, get_config


def test_tree_has_the_documented_configs():
    names = set(config_names())
    assert {"gym/ddppo_cartpole", "doom/ddppo_my_way_home", "gym/ver_cartpole",
            "doom/ver_my_way_home", "doom/ddppo_mixed_stragglers",
            "rearrange/ddppo_pick"} <= names


@pytest.mark.parametrize("name", config_names())
def test_config_composes_and_names_registered_classes(name):
    config = get_config(name)
    baselines = config.habitat_baselines
    assert baseline_registry.get_trainer(baselines.trainer_name) is not None
    assert baseline_registry.get_storage(baselines.rollout_storage_name) is not None
    assert baseline_registry.get_updater(baselines.updater_name) is not None
    assert baseline_registry.get_updater(baselines.distrib_updater_name) is not None
    for agent in baselines.rl.policy.values():
        assert baseline_registry.get_policy(agent.name) is not None, agent.name
    assert habitat_registry.get_dataset(config.habitat.dataset.type) is not None
    # Runs of one config never write into another's folders.
    assert name in baselines.checkpoint_folder and name in baselines.tensorboard_dir


def test_overrides_reach_the_composed_config():
    config = get_config("gym/ddppo_cartpole", ["habitat_baselines.num_environments=3"])
    assert config.habitat_baselines.num_environments == 3
