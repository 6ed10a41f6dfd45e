"""The skill checkpoints shipped in habitat_ver/skill_checkpoints/ are what
their provenance says and load into the policy the CPU profile builds."""

import hashlib
import os

import pytest
from habitat.gym.gym_wrapper import create_action_space

from habitat_ver.common.checkpoint import load_checkpoint_file
from habitat_ver.config import shipped_skills
from habitat_ver.config.compose import get_config
from habitat_ver.config.hab_profile import resolved_profile
from habitat_ver.config.hab_validate import action_space_of, observation_space_of
from habitat_ver.config.unread_cameras import without_unread_cameras
from habitat_ver.policies.ver_policy import VERPolicy

SHIPPED = shipped_skills.provenance()


def test_every_shipped_file_has_a_record_and_every_record_a_file():
    files = {
        f[: -len(".pth")] for f in os.listdir(shipped_skills.SHIPPED_DIR) if f.endswith(".pth")
    }
    assert files == set(SHIPPED)


@pytest.mark.parametrize("skill", sorted(SHIPPED))
def test_a_shipped_checkpoint_matches_its_record_and_loads(skill):
    record = SHIPPED[skill]
    path = shipped_skills.shipped_checkpoint(skill)
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == record["sha256"]
    assert os.path.getsize(path) == record["bytes"]
    # Trained in the CPU profile of the config it names, on the val arrangements
    # better than the same policy untrained.
    config = without_unread_cameras(
        resolved_profile(get_config(record["config"], ["hab_profile=cpu"]))
    )
    assert list(config.habitat.gym.obs_keys) == record["obs_keys"]
    assert config.habitat.task.type == record["task"]
    assert record["val_success_trained"] > record["val_success_untrained"]
    checkpoint = load_checkpoint_file(path)
    policy = VERPolicy.from_config(
        config, observation_space_of(config), create_action_space(action_space_of(config))
    )
    policy.load_state_dict(checkpoint["state_dict"])  # strict: every weight, same shapes
    assert checkpoint["extra_state"]["step"] == record["steps"]
