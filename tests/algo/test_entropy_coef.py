"""The learned entropy coefficient: math, module, and PPOUpdater integration."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from gym import spaces
from omegaconf import OmegaConf
from habitat_baselines.rl.ppo.ppo import PPO

from habitat_ver.algo.entropy_coef import (
    clamp_log_alpha,
    entropy_coef_loss,
    entropy_target,
)
from habitat_ver.policies.ver_policy_config import VERPolicyConfig
from habitat_ver.policies.ver_policy import VERPolicy
from habitat_ver.storage.rollout_storage import LockstepRolloutStorage
from habitat_ver.updaters.entropy import (
    EntropyCoefficient,
    FixedEntropyCoefficient,
    LearnedEntropyCoefficient,
)
from habitat_ver.updaters.ppo import PPOUpdater, action_dims


def test_loss_hand_computed():
    # alpha = 0.5, H = 2, target = 0.5:
    #   loss = alpha * (H - target) - alpha * H = 0.5 * 1.5 - 0.5 * 2 = -0.25
    #   d/dlog_alpha = alpha * (H - target) = 0.5 * 1.5 = 0.75 (the second
    #     term's alpha is stop-gradient)
    #   d/dH = -alpha = -0.5 (the first term's H is stop-gradient)
    log_alpha = torch.tensor(math.log(0.5), requires_grad=True)
    entropy = torch.tensor(2.0, requires_grad=True)
    loss = entropy_coef_loss(log_alpha, entropy, 0.5)
    torch.testing.assert_close(loss, torch.tensor(-0.25))
    loss.backward()
    torch.testing.assert_close(log_alpha.grad, torch.tensor(0.75))
    torch.testing.assert_close(entropy.grad, torch.tensor(-0.5))


@settings(max_examples=50, deadline=None)
@given(
    log_alpha=st.floats(math.log(1e-4), 0.0),
    entropy=st.floats(-5.0, 5.0),
    target=st.floats(-5.0, 5.0),
)
def test_alpha_gradient_sign_follows_the_constraint(log_alpha, entropy, target):
    # Entropy above target: dL/dlog_alpha > 0, so descent lowers alpha;
    # below target it raises alpha; the policy always sees -alpha * H.
    la = torch.tensor(log_alpha, dtype=torch.float64, requires_grad=True)
    h = torch.tensor(entropy, dtype=torch.float64, requires_grad=True)
    entropy_coef_loss(la, h, target).backward()
    alpha = math.exp(log_alpha)
    assert la.grad.item() == pytest.approx(alpha * (entropy - target), rel=1e-9, abs=1e-12)
    assert h.grad.item() == pytest.approx(-alpha)


def test_clamp_and_target():
    out = clamp_log_alpha(torch.tensor([-20.0, math.log(0.01), 3.0]))
    torch.testing.assert_close(out, torch.tensor([math.log(1e-4), math.log(0.01), 0.0]))
    # habitat's meaning: -factor * dims; 0.5 * 9 Box dims -> -4.5
    assert entropy_target(0.5, 9) == -4.5
    assert entropy_target(0.0, 3) == 0.0


def _run_coef(entropy_value, steps, lr=0.1):
    coef = LearnedEntropyCoefficient(target=0.0, init_alpha=1e-3, lr=lr)
    alphas = []
    for _ in range(steps):
        coef.loss(torch.tensor(entropy_value)).backward()
        coef.step()
        alphas.append(float(coef().detach()))
    return alphas


def test_alpha_decreases_above_target_increases_below_and_stays_in_bounds():
    above = _run_coef(1.0, 200)
    below = _run_coef(-1.0, 200)
    assert above[0] < 1e-3 and below[0] > 1e-3
    assert all(b <= a for a, b in zip(above, above[1:]))
    assert all(b >= a for a, b in zip(below, below[1:]))
    for a in above + below:
        assert 1e-4 * (1 - 1e-6) <= a <= 1.0 * (1 + 1e-6)
    # Held long enough, alpha sits on its bounds instead of passing them.
    assert above[-1] == pytest.approx(1e-4) and below[-1] == pytest.approx(1.0)


def test_module_defaults_state_round_trip_and_bad_init():
    coef = LearnedEntropyCoefficient()
    assert float(coef().detach()) == pytest.approx(1e-3)
    assert coef.bounds == (1e-4, 1.0) and coef.target == 0.0
    coef.loss(torch.tensor(0.3)).backward()
    coef.step()
    fresh = LearnedEntropyCoefficient()
    fresh.set_state(coef.get_state())
    assert torch.equal(fresh.log_alpha, coef.log_alpha)
    for c in (coef, fresh):
        c.loss(torch.tensor(0.3)).backward()
        c.step()
    assert torch.equal(fresh.log_alpha, coef.log_alpha)  # Adam moments restored
    with pytest.raises(ValueError, match="init_alpha=2.0 must lie in bounds"):
        LearnedEntropyCoefficient(init_alpha=2.0)


def test_action_dims_counts_one_per_discrete_part():
    assert action_dims(spaces.Discrete(5)) == 1
    assert action_dims(spaces.Box(-1, 1, (7,))) == 7
    assert action_dims(spaces.MultiDiscrete([3, 4])) == 2
    assert action_dims(spaces.Dict({"a": spaces.Box(-1, 1, (2,)), "b": spaces.Discrete(3)})) == 3


# --------------------------------------------------------- PPOUpdater
STEPS, ENVS = 4, 2
OBS = spaces.Dict(
    {
        "depth": spaces.Box(0.0, 1.0, (32, 32, 1), np.float32),
        "state": spaces.Box(-1.0, 1.0, (3,), np.float32),
    }
)


def _obs(n, seed):
    g = torch.Generator().manual_seed(seed)
    return {"depth": torch.rand(n, 32, 32, 1, generator=g), "state": torch.rand(n, 3, generator=g)}


def _policy_and_storage():
    torch.manual_seed(0)
    cfg = VERPolicyConfig(
        base_planes=8, ngroups=4, visual_embedding_size=8, prev_action_embedding_size=4
    )
    policy = VERPolicy(OBS, spaces.Discrete(3), hidden_size=8, ver_config=cfg)
    storage = LockstepRolloutStorage(
        STEPS, ENVS, OBS, policy.policy_action_space, policy, is_double_buffered=False
    )
    storage.insert_first_observations(_obs(ENVS, 0))
    for t in range(STEPS):
        cur = storage.buffers[t]
        with torch.no_grad():
            out = policy.act(
                cur["observations"],
                cur["recurrent_hidden_states"],
                cur["prev_actions"],
                cur["masks"],
            )
        storage.insert(
            next_observations=_obs(ENVS, t + 1),
            next_recurrent_hidden_states=out.rnn_hidden_states,
            actions=out.actions,
            action_log_probs=out.action_log_probs,
            value_preds=out.values,
            rewards=torch.rand(ENVS, 1),
            next_masks=torch.tensor([[True], [t != 2]]),
        )
        storage.advance_rollout()
    storage.compute_returns(torch.zeros(ENVS, 1), True, 0.99, 0.95)
    return policy, storage


def _updater(policy, adaptive, lr=0.05):
    return PPOUpdater(
        policy,
        clip_param=0.2,
        ppo_epoch=2,
        num_mini_batch=2,
        value_loss_coef=0.5,
        entropy_coef=1e-3,
        lr=lr,
        eps=1e-5,
        max_grad_norm=0.5,
        use_normalized_advantage=False,
        entropy_target_factor=0.0,
        use_adaptive_entropy_pen=adaptive,
    )


def test_upstream_ppo_silently_keeps_a_fixed_coefficient_for_categorical():
    policy, _ = _policy_and_storage()
    upstream = PPO(
        policy,
        0.2,
        1,
        1,
        0.5,
        1e-3,
        lr=1e-3,
        eps=1e-5,
        max_grad_norm=0.5,
        use_adaptive_entropy_pen=True,
    )
    assert isinstance(upstream.entropy_coef, float)


def test_categorical_policy_learned_coefficient_through_ppo_updater():
    policy, storage = _policy_and_storage()
    updater = _updater(policy, adaptive=True)
    coef = updater.entropy_coef
    assert isinstance(coef, LearnedEntropyCoefficient)
    assert coef.target == 0.0  # -0.0 factor x 1 dimension
    # log_alpha has its own optimiser, not the policy's.
    policy_params = {id(p) for g in updater.optimizer.param_groups for p in g["params"]}
    assert id(coef.log_alpha) not in policy_params
    metrics = updater.update(storage)
    # A near-uniform categorical over 3 actions has H ~ log 3 > 0 = target,
    # so after 2 epochs x 2 minibatches alpha went down from 1e-3.
    assert metrics["learner/loss/entropy"] > 1.0
    assert float(coef().detach()) < 1e-3
    assert 1e-4 <= metrics["learner/entropy_coef"] < 1e-3
    assert coef.log_alpha.grad is None

    state = updater.get_resume_state()
    fresh = _updater(_policy_and_storage()[0], adaptive=True)
    fresh.load_state_dict(state)
    assert torch.equal(fresh.entropy_coef.log_alpha, coef.log_alpha)


def test_gaussian_target_is_minus_factor_times_action_dims():
    cfg = VERPolicyConfig(
        base_planes=8, ngroups=4, visual_embedding_size=8, prev_action_embedding_size=4
    )
    actions = spaces.Dict({"arm": spaces.Box(-1, 1, (7,)), "base": spaces.Box(-1, 1, (2,))})
    policy = VERPolicy(OBS, actions, hidden_size=8, ver_config=cfg)
    updater = PPOUpdater(
        policy,
        0.2,
        1,
        1,
        0.5,
        1e-3,
        lr=1e-3,
        eps=1e-5,
        max_grad_norm=0.5,
        entropy_target_factor=0.5,
        use_adaptive_entropy_pen=True,
    )
    assert updater.entropy_coef.target == -4.5  # -0.5 x 9 dims


def test_the_updater_keeps_a_std_parameter_in_its_bounds_after_each_step():
    cfg = VERPolicyConfig(
        base_planes=8, ngroups=4, visual_embedding_size=8, prev_action_embedding_size=4
    )
    actions = spaces.Box(-1, 1, (2,))
    dist = {"use_std_param": True, "log_std_init": 0.0, "max_log_std": 0.0}
    policy_config = OmegaConf.create({"action_distribution_type": "gaussian", "action_dist": dist})
    policy = VERPolicy(OBS, actions, hidden_size=8, ver_config=cfg, policy_config=policy_config)
    (head,) = policy.action_distribution.heads
    with torch.no_grad():
        head.std_param.fill_(0.7)
    _updater(policy, adaptive=True).after_step()
    assert torch.equal(head.std_param.detach(), torch.zeros(2))


def test_fixed_coefficient_stays_default_and_is_logged():
    policy, storage = _policy_and_storage()
    updater = _updater(policy, adaptive=False)
    assert isinstance(updater.entropy_coef, FixedEntropyCoefficient)
    assert updater.entropy_coef.coef == 1e-3
    metrics = updater.update(storage)
    assert metrics["learner/entropy_coef"] == pytest.approx(1e-3)
    assert "entropy_coef_state" not in updater.get_resume_state()


def test_the_constraint_compares_the_measured_entropy_the_bonus_keeps_its_own():
    # alpha = 0.5, bonus term H = 1 (weighted by w <= 1), measured H_m = 2,
    # target 0.5: d/dlog_alpha = alpha * (H_m - target) = 0.75; d/dH = -alpha.
    log_alpha = torch.tensor(math.log(0.5), requires_grad=True)
    entropy = torch.tensor(1.0, requires_grad=True)
    loss = entropy_coef_loss(log_alpha, entropy, 0.5, measured=torch.tensor(2.0))
    torch.testing.assert_close(loss, torch.tensor(0.5 * 1.5 - 0.5 * 1.0))
    loss.backward()
    torch.testing.assert_close(log_alpha.grad, torch.tensor(0.75))
    torch.testing.assert_close(entropy.grad, torch.tensor(-0.5))


def test_importance_weights_do_not_lower_the_entropy_alpha_sees_or_the_log():
    # VER's weights (here 0.25 for every sample) scale the bonus term like the
    # other losses, but the entropy compared with the target and logged is the
    # policy's own: the same as without weights.
    policy, storage = _policy_and_storage()
    updater = _updater(policy, adaptive=True)
    batch = next(storage.data_generator(storage.buffers["returns"] * 0 + 1, 1))
    values, log_probs, entropy, _, _ = policy.evaluate_actions(
        batch["observations"],
        batch["recurrent_hidden_states"],
        batch["prev_actions"],
        batch["masks"],
        batch["actions"],
        batch["rnn_build_seq_info"],
    )
    plain = updater._compute_losses(batch, values, log_probs, entropy)
    batch["is_coeffs"] = torch.full_like(values, 0.25)
    weighted = updater._compute_losses(batch, values, log_probs, entropy)
    torch.testing.assert_close(weighted.entropy, 0.25 * plain.entropy)
    torch.testing.assert_close(weighted.measured_entropy, plain.measured_entropy)
    torch.testing.assert_close(plain.measured_entropy, entropy.mean().detach())
    coef = updater.entropy_coef
    coef.loss(weighted.entropy, weighted.measured_entropy).backward()
    alpha = float(coef().detach())
    assert float(coef.log_alpha.grad) == pytest.approx(
        alpha * float(entropy.mean().detach()), rel=1e-5
    )


def test_the_updater_uses_the_storages_weights_as_they_are():
    # The storage truncates at its is_coeff_cap; a second cap at 1 in the
    # updater undid any cap above 1.
    policy, storage = _policy_and_storage()
    updater = _updater(policy, adaptive=False)
    batch = next(storage.data_generator(storage.buffers["returns"] * 0 + 1, 1))
    batch["is_coeffs"] = torch.full((batch["actions"].shape[0], 1), 2.0)
    weights, _ = updater._sample_weights_and_mask(batch)
    assert torch.equal(weights, batch["is_coeffs"])


def test_fixed_coefficient_has_the_learned_ones_interface():
    # coef 0.5, H = 2: loss -0.5 * 2 = -1, d/dH = -0.5; nothing to step or save.
    coef = FixedEntropyCoefficient(0.5)
    entropy = torch.tensor(2.0, requires_grad=True)
    loss = coef.loss(entropy, measured=torch.tensor(7.0))  # measured: unused
    torch.testing.assert_close(loss, torch.tensor(-1.0))
    loss.backward()
    torch.testing.assert_close(entropy.grad, torch.tensor(-0.5))
    coef.step()
    torch.testing.assert_close(coef.value(), torch.tensor(0.5))
    assert coef.get_state() == {}
    coef.set_state(LearnedEntropyCoefficient().get_state())  # ignored
    assert coef.coef == 0.5
    assert isinstance(coef, EntropyCoefficient)
    assert isinstance(LearnedEntropyCoefficient(), EntropyCoefficient)
