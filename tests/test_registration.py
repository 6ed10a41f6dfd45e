"""What `import habitat_ver` puts into habitat's registries."""

import pytest

import habitat_ver  # noqa: F401
from habitat.core.registry import registry as habitat_registry
from habitat_baselines.common.baseline_registry import baseline_registry
from habitat_baselines.rl.ppo.ppo_trainer import PPOTrainer

from habitat_ver import registration
from habitat_ver.trainers.ddppo import DDPPOTrainer


def test_ddppo_is_ours_and_upstream_stays_reachable():
    assert baseline_registry.get_trainer("ddppo") is DDPPOTrainer
    upstream = baseline_registry.get_trainer("upstream_ddppo")
    assert upstream is not None and upstream is not DDPPOTrainer
    assert upstream.__module__.startswith("habitat_baselines.")
    assert issubclass(upstream, PPOTrainer)
    upstream_ver = baseline_registry.get_trainer("upstream_ver")
    assert upstream_ver.__module__.startswith("habitat_baselines.rl.ver")


@pytest.mark.parametrize(
    "kind, name",
    [
        ("storage", "LockstepRolloutStorage"),
        ("updater", "PPOUpdater"),
        ("updater", "DDPPOUpdater"),
        ("policy", "CompactPolicy"),
    ],
)
def test_our_classes_are_registered(kind, name):
    cls = baseline_registry.mapping[kind][name]
    assert cls.__module__.startswith("habitat_ver.")


def test_dataset_for_gym_tasks_is_registered():
    assert (
        habitat_registry.get_dataset("NoEpisodes-v0").__module__ == "habitat_ver.envs.no_episodes"
    )


def test_registering_again_is_idempotent():
    registration.register_all()
    assert baseline_registry.get_trainer("ddppo") is DDPPOTrainer


def test_overwriting_someone_elses_name_is_refused():
    table = {"PPO": PPOTrainer}
    with pytest.raises(registration.RegistryConflictError, match="'PPO' is already registered"):
        registration._register(table, "updater", "PPO", DDPPOTrainer)
    assert table["PPO"] is PPOTrainer
