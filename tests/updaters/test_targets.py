"""The PPO updater's targets step: V-trace for appo through the shared loop."""

import numpy as np
import pytest
import torch

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from gym import spaces

from habitat_ver.algo.ppo_loss import (
    clipped_surrogate_loss,
    gated_clipped_value_loss,
    value_loss,
)
from habitat_ver.algo.vtrace import vtrace
from habitat_ver.policies.ver_policy_config import VERPolicyConfig
from habitat_ver.policies.ver_policy import VERPolicy
from habitat_ver.system.appo_batch import TrajectoryBatch
from habitat_ver.updaters.ppo import PPOUpdater
from habitat_ver.updaters.gae_targets import GAETargets
from habitat_ver.updaters.vtrace_targets import VTraceTargets

T, B = 3, 2
GAMMA, RHO_BAR, C_BAR = 0.9, 1.0, 0.8


def test_vtrace_targets_are_vtrace_of_the_current_values():
    # algo.vtrace equals IMPALA's explicit loop (tests/algo/test_vtrace.py); here:
    # the step feeds it the current critic, its bootstrap row and the behaviour
    # log-probs, and hands the losses the T learnt steps.
    g = torch.Generator().manual_seed(3)
    values = torch.randn(T + 1, B, 1, generator=g)  # current critic, bootstrap row last
    log_probs = -torch.rand(T + 1, B, 1, generator=g)
    behaviour = -torch.rand(T, B, 1, generator=g)
    rewards = torch.randn(T, B, 1, generator=g)
    dones = torch.zeros(T, B, 1, dtype=torch.bool)
    dones[1, 0] = True
    batch = {
        "action_log_probs": behaviour.reshape(T * B, 1),
        "rewards": rewards,
        "dones": dones,
        "truncated": torch.zeros_like(dones),
    }
    entropy = torch.rand(T + 1, B, 1, generator=g)
    step = VTraceTargets(GAMMA, RHO_BAR, C_BAR, normalize_advantage=False)
    out_values, out_log_probs, out_entropy = step.on_minibatch(
        batch, values.reshape(-1, 1), log_probs.reshape(-1, 1), entropy.reshape(-1, 1)
    )
    ref = vtrace(
        behaviour, log_probs[:-1], rewards, values[:-1], dones, values[-1], GAMMA, RHO_BAR, C_BAR
    )
    torch.testing.assert_close(batch["returns"], ref.vs.reshape(T * B, 1))
    torch.testing.assert_close(batch["advantages"], ref.pg_advantages.reshape(T * B, 1))
    # The losses see the T learnt steps, time-major like action_log_probs.
    assert torch.equal(out_values, values[:-1].reshape(T * B, 1))
    assert torch.equal(out_log_probs, log_probs[:-1].reshape(T * B, 1))
    assert torch.equal(out_entropy, entropy[:-1].reshape(T * B, 1))
    assert step.before_epochs(None, None) is None


def test_normalised_vtrace_advantages_have_zero_mean_unit_std():
    g = torch.Generator().manual_seed(4)
    batch = {
        "action_log_probs": -torch.rand(T * B, 1, generator=g),
        "rewards": torch.randn(T, B, 1, generator=g),
        "dones": torch.zeros(T, B, 1, dtype=torch.bool),
        "truncated": torch.zeros(T, B, 1, dtype=torch.bool),
    }
    n = (T + 1) * B
    VTraceTargets(GAMMA).on_minibatch(
        batch, torch.randn(n, 1, generator=g), -torch.rand(n, 1, generator=g), torch.rand(n, 1)
    )
    assert float(batch["advantages"].mean()) == pytest.approx(0.0, abs=1e-6)
    assert float(batch["advantages"].std()) == pytest.approx(1.0, abs=1e-4)


# ----------------------------------------------- appo batches in PPOUpdater
OBS = spaces.Dict(
    {
        "depth": spaces.Box(0.0, 1.0, (32, 32, 1), np.float32),
        "state": spaces.Box(-1.0, 1.0, (3,), np.float32),
    }
)


def _policy():
    torch.manual_seed(0)
    cfg = VERPolicyConfig(
        base_planes=8, ngroups=4, visual_embedding_size=8, prev_action_embedding_size=4
    )
    return VERPolicy(OBS, spaces.Discrete(3), hidden_size=8, ver_config=cfg)


def _trajectories(policy):
    """``B`` trajectories the policy acted on, with off-policy behaviour
    log-probs and stored values far (> clip) from the current ones."""
    g = torch.Generator().manual_seed(1)
    hidden = torch.zeros(B, policy.num_recurrent_layers, policy.recurrent_hidden_size)
    obs = {
        "depth": torch.rand(T + 1, B, 32, 32, 1, generator=g),
        "state": torch.rand(T + 1, B, 3, generator=g) * 2 - 1,
    }
    masks = torch.ones(T + 1, B, 1, dtype=torch.bool)
    masks[2, 1] = False  # trajectory 1: an episode begins at step 2
    prev = torch.zeros(T + 1, B, 1, dtype=torch.long)
    actions = torch.zeros(T + 1, B, 1, dtype=torch.long)
    log_probs, values, h = torch.zeros(T, B, 1), torch.zeros(T, B, 1), hidden
    with torch.no_grad():
        for t in range(T):
            out = policy.act({k: v[t] for k, v in obs.items()}, h, prev[t], masks[t])
            actions[t], log_probs[t], values[t] = out.actions, out.action_log_probs, out.values
            h = out.rnn_hidden_states
            prev[t + 1] = out.actions
    dones = torch.logical_not(masks[1:])
    return {
        "observations": obs,
        "masks": masks,
        "prev_actions": prev,
        "actions": actions,
        "behaviour_log_probs": log_probs - 0.3 * torch.rand(T, B, 1, generator=g),
        "value_preds": values + torch.tensor([0.5, -0.5]).view(1, B, 1),
        "rewards": torch.randn(T, B, 1, generator=g),
        "dones": dones,
        "truncated": torch.zeros_like(dones),
        "hidden": hidden,
    }


def _reference_losses(policy, data, clipped):
    """The losses of one epoch of one minibatch at the starting weights."""
    torch.manual_seed(7)
    mb = next(TrajectoryBatch(data, torch.device("cpu")).data_generator(None, 1))
    with torch.no_grad():
        values, log_probs, _, _, _ = policy.evaluate_actions(
            mb["observations"],
            mb["recurrent_hidden_states"],
            mb["prev_actions"],
            mb["masks"],
            mb["actions"],
            mb["rnn_build_seq_info"],
        )
    values, log_probs = values.view(T + 1, B, 1), log_probs.view(T + 1, B, 1)[:-1]
    behaviour = mb["action_log_probs"].view(T, B, 1)
    targets = vtrace(
        behaviour, log_probs, mb["rewards"], values[:-1], mb["dones"], values[-1], GAMMA, 1.0, C_BAR
    )
    adv = targets.pg_advantages
    adv = (adv - adv.mean()) / (adv.std() + 1e-5)
    policy_loss = clipped_surrogate_loss(log_probs, behaviour, adv, 0.2).loss
    old = mb["value_preds"].view(T, B, 1)
    if clipped:
        critic = gated_clipped_value_loss(values[:-1], old, targets.vs, 0.2)
    else:
        critic = value_loss(values[:-1], targets.vs)
    return float(policy_loss), float(critic)


@pytest.mark.parametrize("clipped", [False, True])
def test_appo_minibatches_go_through_the_shared_loop_with_value_clipping(clipped):
    policy = _policy()
    data = _trajectories(policy)
    ref_policy, ref_value = _reference_losses(policy, data, clipped)
    updater = PPOUpdater(
        policy,
        clip_param=0.2,
        ppo_epoch=1,
        num_mini_batch=1,
        value_loss_coef=0.5,
        entropy_coef=0.01,
        lr=1e-3,
        eps=1e-5,
        max_grad_norm=0.5,
        use_clipped_value_loss=clipped,
        use_normalized_advantage=True,
    )
    updater.use_targets(VTraceTargets(GAMMA, 1.0, C_BAR, normalize_advantage=True))
    before = [p.detach().clone() for p in policy.parameters()]
    torch.manual_seed(7)
    metrics = updater.update(TrajectoryBatch(data, torch.device("cpu")))
    assert metrics["learner/loss/policy"] == pytest.approx(ref_policy, rel=1e-5, abs=1e-6)
    assert metrics["learner/loss/value"] == pytest.approx(ref_value, rel=1e-5, abs=1e-6)
    assert 0.0 < metrics["learner/vtrace_rho_mean"] <= 1.0
    assert any(not torch.equal(b, p) for b, p in zip(before, policy.parameters()))


def test_clipping_changes_the_reference_value_loss():
    # The stored values are 0.5 away from the current ones: the gated loss differs.
    policy = _policy()
    data = _trajectories(policy)
    assert _reference_losses(policy, data, True)[1] != pytest.approx(
        _reference_losses(policy, data, False)[1], rel=1e-3
    )


def test_default_targets_step_is_gae():
    updater = PPOUpdater(_policy(), 0.2, 1, 1, 0.5, 0.01, lr=1e-3, eps=1e-5, max_grad_norm=0.5)
    assert isinstance(updater.targets, GAETargets)


def test_update_reports_the_extremes_of_min_and_max_metrics_and_the_mean_of_the_rest(
    monkeypatch,
):
    # 2 epochs x 2 minibatches; per minibatch (a mean, a max, a min).
    updater = PPOUpdater(_policy(), 0.2, 2, 2, 0.5, 0.01, lr=1e-3, eps=1e-5, max_grad_norm=0.5)
    recorded = iter([(1.0, 5.0, -1.0), (3.0, 2.0, -4.0), (2.0, 9.0, 0.0), (0.0, 1.0, 2.0)])

    def record(batch, epoch, rollouts, metrics):
        mean, largest, smallest = next(recorded)
        metrics["system/policy_lag/mean"].append(mean)
        metrics["system/policy_lag/max"].append(largest)
        metrics["system/policy_lag/min"].append(smallest)
        metrics["learner/loss/total"].append(torch.tensor(mean))

    class TwoMinibatches:
        def data_generator(self, advantages, num_mini_batch):
            return iter([{}, {}])

    monkeypatch.setattr(updater, "_update_from_batch", record)
    monkeypatch.setattr(updater.targets, "before_epochs", lambda updater, rollouts: None)
    # The max and min used to be averaged too (a "max" lag of 4.25 here).
    assert updater.update(TwoMinibatches()) == {
        "system/policy_lag/mean": 1.5,
        "system/policy_lag/max": 9.0,
        "system/policy_lag/min": -4.0,
        "learner/loss/total": 1.5,
    }


@pytest.mark.parametrize(
    "trajectories, minibatches, sizes",
    [(5, 4, [2, 1, 1, 1]), (6, 4, [2, 2, 1, 1]), (4, 4, [1, 1, 1, 1])],
)
def test_appo_batch_yields_exactly_num_mini_batch_minibatches_of_whole_trajectories(
    trajectories, minibatches, sizes
):
    steps = 3
    data = {
        "observations": {"x": torch.arange(trajectories).repeat(steps + 1, 1).unsqueeze(-1)},
        "masks": torch.ones(steps + 1, trajectories, 1, dtype=torch.bool),
        "prev_actions": torch.zeros(steps + 1, trajectories, 1, dtype=torch.long),
        "actions": torch.zeros(steps + 1, trajectories, 1, dtype=torch.long),
        "behaviour_log_probs": torch.zeros(steps, trajectories, 1),
        "value_preds": torch.zeros(steps, trajectories, 1),
        "rewards": torch.zeros(steps, trajectories, 1),
        "dones": torch.zeros(steps, trajectories, 1, dtype=torch.bool),
        "truncated": torch.zeros(steps, trajectories, 1, dtype=torch.bool),
        "hidden": torch.zeros(trajectories, 1, 4),
    }
    torch.manual_seed(0)
    batches = list(TrajectoryBatch(data, torch.device("cpu")).data_generator(None, minibatches))
    per_batch = [mb["observations"]["x"].view(steps + 1, -1)[0].tolist() for mb in batches]
    assert sorted(len(ids) for ids in per_batch) == sorted(sizes)
    assert sorted(i for ids in per_batch for i in ids) == list(range(trajectories))
