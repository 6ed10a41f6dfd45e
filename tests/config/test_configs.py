"""Every config of our tree composes, and names only registered classes."""

import gzip
import re

import pytest
from habitat.core.registry import registry as habitat_registry
from habitat_baselines.common.baseline_registry import baseline_registry

from habitat_ver.config.compose import config_names, get_config
from habitat_ver.config.validate import validate_schedule, validate_trainer, validate_training


def test_tree_has_the_documented_configs():
    names = set(config_names())
    assert {
        "gym/ddppo_cartpole",
        "doom/ddppo_my_way_home",
        "gym/ver_cartpole",
        "doom/ver_my_way_home",
        "doom/ddppo_mixed_stragglers",
        "doom/ddppo_wait_bound",
        "rearrange/ddppo_pick",
    } <= names


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
    # Its own trainer honours every key it sets (doom/ddppo_wait_bound once set
    # rl.appo, and `ver` and `ddppo` refused it): the trainer's check_config.
    validate_trainer(config)
    # Its numbers and schedule pass the start-up checks (those needing no
    # simulator, dataset or checkpoint).
    validate_training(config)
    validate_schedule(config)


def test_overrides_reach_the_composed_config():
    config = get_config("gym/ddppo_cartpole", ["habitat_baselines.num_environments=3"])
    assert config.habitat_baselines.num_environments == 3


@pytest.mark.parametrize("evaluate, split", [(False, "train"), (True, "val")])
def test_missing_pointnav_dataset_names_the_generator(tmp_path, evaluate, split):
    from habitat_ver.config.validate import ConfigError, validate_pointnav_dataset

    data_path = tmp_path / "v1" / "{split}" / "{split}.json.gz"
    config = get_config(
        "pointnav/ddppo_simple_room",
        [
            f"habitat.dataset.data_path='{data_path}'",
            f"habitat.dataset.scenes_dir={tmp_path}",
            f"habitat_baselines.evaluate={evaluate}",
        ],
    )
    missing = str(data_path).format(split=split)
    with pytest.raises(
        ConfigError,
        match=r"habitat.dataset.data_path='"
        + re.escape(missing)
        + r"'.*python -m habitat_ver.tools.make_pointnav_dataset",
    ):
        validate_pointnav_dataset(config)
    (tmp_path / "v1" / split).mkdir(parents=True)
    with open(missing, "wb") as f:
        f.write(gzip.compress(b'{"episodes": []}'))
    validate_pointnav_dataset(config)  # present: no error
