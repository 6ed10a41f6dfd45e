"""CPC|A trains under `ver` and `ddppo`: its loss is logged and its module learns."""

import math

import pytest
import torch

from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp
from habitat_ver.updaters.ppo import PPOUpdater

from .conftest import run_overrides, tensorboard_scalars

UPDATES = 4


@pytest.mark.parametrize("trainer", ["ver", "ddppo"])
def test_cpca_loss_is_logged_and_its_module_gets_gradients(trainer, out_dir, monkeypatch):
    grads, first_params = [], []

    def record(updater, loss):
        aux = updater.actor_critic.aux_loss_modules["cpca"]
        if not first_params:  # before the first optimizer step
            first_params.extend(p.detach().clone() for p in aux.parameters())
        grads.append(
            [p.grad is not None and bool(p.grad.abs().sum() > 0) for p in aux.parameters()]
        )

    monkeypatch.setattr(PPOUpdater, "after_backward", record)
    overrides = run_overrides(out_dir, num_updates=UPDATES) + [
        "aux_losses=cpca",  # the embedded ViZDoom env gives CompactPolicy RGB images
        "habitat_baselines.rl.ppo.hidden_size=32",
    ]
    done = execute_exp(get_config(f"doom/{trainer}_my_way_home", overrides), "train")
    assert done.num_updates_done == UPDATES

    losses = tensorboard_scalars(out_dir / "tb")["learner/aux/cpca/loss"]
    assert len(losses) == UPDATES
    assert all(math.isfinite(v) and v > 0 for v in losses)
    assert len(set(losses)) > 1  # a new value every update
    # Every parameter of the CPC|A module got a gradient at every step (2 epochs
    # x 1 minibatch per update) and moved.
    assert len(grads) == UPDATES * 2 and all(all(step) for step in grads)
    aux = done._agent.actor_critic.aux_loss_modules["cpca"]
    assert all(not torch.equal(p, q) for p, q in zip(aux.parameters(), first_params))
    # The module is in the checkpoint, so a resumed run keeps training it.
    latest = torch.load(out_dir / "checkpoints" / "latest.pth", weights_only=True)
    assert any(k.startswith("aux_loss_modules.cpca.") for k in latest["state_dict"])
