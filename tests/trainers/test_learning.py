"""Learning checks with small budgets (marked slow; CI runs them too)."""

import pytest

from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp

from .conftest import assert_learned_cartpole, cartpole_learning_overrides


@pytest.mark.slow
@pytest.mark.parametrize("config_name", ["gym/ddppo_cartpole", "gym/ver_cartpole"])
def test_solves_cartpole_within_the_budget(out_dir, config_name):
    # The config's PPO recipe (32 steps, 20 epochs), not run_overrides' tiny one.
    overrides = cartpole_learning_overrides(out_dir, ppo_epoch=20)
    trainer = execute_exp(get_config(config_name, overrides), "train")
    assert_learned_cartpole(trainer)
