"""Attaching upstream's auxiliary losses (CPC|A) to a config of our tree."""

import pytest
from gym import spaces
import numpy as np

from habitat_ver.config.aux_losses import validate_aux_losses
from habitat_ver.config.compose import get_config
from habitat_ver.config.errors import ConfigError
from habitat_ver.policies.compact_policy import CompactPolicy

# Upstream's CPCALossConfig.
CPCA_DEFAULTS = {"k": 20, "time_subsample": 6, "future_subsample": 2, "loss_scale": 0.1}
UPSTREAM_GROUP_OVERRIDE = (
    "+habitat_baselines/rl/auxiliary_losses@habitat_baselines.rl.auxiliary_losses.cpca=cpca"
)


def _aux(name, *overrides):
    config = get_config(name, list(overrides))
    validate_aux_losses(config)
    return dict(config.habitat_baselines.rl.auxiliary_losses)


@pytest.mark.parametrize("name", ["pointnav/ver_simple_room", "doom/ddppo_my_way_home"])
def test_the_documented_forms_attach_cpca(name):
    assert _aux(name) == {}
    assert _aux(name, "aux_losses=cpca") == {"cpca": CPCA_DEFAULTS}
    # The override: Hydra looked for 'pointnav/habitat_baselines/rl/auxiliary_losses/cpca'.
    assert _aux(name, UPSTREAM_GROUP_OVERRIDE) == {"cpca": CPCA_DEFAULTS}
    # "dict is not a subclass of AuxLossConfig" before.
    assert _aux(name, "+habitat_baselines.rl.auxiliary_losses.cpca.loss_scale=0.05") == {
        "cpca": {"loss_scale": 0.05}
    }
    tuned = _aux(name, "aux_losses=cpca", "habitat_baselines.rl.auxiliary_losses.cpca.k=8")
    assert tuned == {"cpca": dict(CPCA_DEFAULTS, k=8)}


@pytest.mark.parametrize(
    "override, message",
    [
        (
            "+habitat_baselines.rl.auxiliary_losses.cpca.los_scale=0.1",
            r"^habitat_baselines\.rl\.auxiliary_losses\.cpca\.los_scale=0\.1 is not allowed: "
            r"CPCA takes \['k', 'time_subsample', 'future_subsample', 'num_negatives', "
            r"'loss_scale'\]$",
        ),
        (
            "+habitat_baselines.rl.auxiliary_losses.cpc={}",
            r"auxiliary_losses\.cpc is not allowed: not a registered auxiliary loss; "
            r"registered: \['cpca'\]",
        ),
        (
            "+habitat_baselines.rl.auxiliary_losses.cpca=0.1",
            r"auxiliary_losses\.cpca=0\.1 is not allowed: the loss's arguments as a mapping",
        ),
    ],
)
def test_a_wrong_aux_loss_setting_is_one_config_error(override, message):
    with pytest.raises(ConfigError, match=message):
        _aux("gym/ddppo_cartpole", override)


def test_cpca_on_a_policy_without_images_is_one_config_error():
    # Upstream asserted inside CPCA: "CPCA only works for networks with a visual encoder".
    observations = spaces.Dict({"obs": spaces.Box(-1.0, 1.0, (4,), np.float32)})
    with pytest.raises(
        ConfigError,
        match=r"auxiliary_losses\.cpca is not allowed with this env: cpca predicts the "
        r"visual embedding, and CompactPolicy gets no image observation here",
    ):
        CompactPolicy(observations, spaces.Discrete(2), aux_loss_config={"cpca": {}})
