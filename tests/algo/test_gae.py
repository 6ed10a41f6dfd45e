"""Numeric tests for habitat_ver.algo.gae."""

import pytest
import torch

from habitat_ver.algo.gae import (
    compute_discounted_returns,
    compute_gae,
    dones_from_next_masks,
)

SEEDS = range(20)


def _hand_example():
    """T=3, N=2 (columns are envs); env 0's episode ends after step 1."""
    rewards = torch.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 1.0]])
    values = torch.tensor([[0.5, 1.0], [1.0, 1.0], [2.0, 1.0]])
    dones = torch.tensor([[False, False], [True, False], [False, False]])
    bootstrap = torch.tensor([4.0, 2.0])
    return rewards, values, dones, bootstrap


def test_gae_hand_computed_with_episode_end():
    # gamma = lambda = 0.5, so gamma * lambda = 0.25.
    # env 0 (done after t=1, so t=1 neither bootstraps nor accumulates):
    #   t=2: delta = 3 + 0.5*4 - 2      = 3      A2 = 3
    #   t=1: delta = 2 + 0 - 1          = 1      A1 = 1 + 0           = 1
    #   t=0: delta = 1 + 0.5*1 - 0.5    = 1      A0 = 1 + 0.25*1      = 1.25
    # env 1 (no episode end):
    #   t=2: delta = 1 + 0.5*2 - 1      = 1      A2 = 1
    #   t=1: delta = 0 + 0.5*1 - 1      = -0.5   A1 = -0.5 + 0.25*1   = -0.25
    #   t=0: delta = 0 + 0.5*1 - 1      = -0.5   A0 = -0.5 + 0.25*-0.25 = -0.5625
    # returns = A + V.
    rewards, values, dones, bootstrap = _hand_example()
    adv, ret = compute_gae(rewards, values, dones, bootstrap, 0.5, 0.5)
    expected_adv = torch.tensor([[1.25, -0.5625], [1.0, -0.25], [3.0, 1.0]])
    torch.testing.assert_close(adv, expected_adv)
    torch.testing.assert_close(ret, expected_adv + values)
    torch.testing.assert_close(ret, torch.tensor([[1.75, 0.4375], [2.0, 0.75], [5.0, 2.0]]))


def test_discounted_returns_hand_computed_with_episode_end():
    # gamma = 0.5.
    # env 0: R2 = 3 + 0.5*4 = 5;  R1 = 2 (episode ended);  R0 = 1 + 0.5*2 = 2
    # env 1: R2 = 1 + 0.5*2 = 2;  R1 = 0 + 0.5*2 = 1;      R0 = 0 + 0.5*1 = 0.5
    rewards, _, dones, bootstrap = _hand_example()
    ret = compute_discounted_returns(rewards, dones, bootstrap, 0.5)
    torch.testing.assert_close(ret, torch.tensor([[2.0, 0.5], [2.0, 1.0], [5.0, 2.0]]))


def _random_rollout(seed, T=7, N=5, trailing=()):
    g = torch.Generator().manual_seed(seed)
    shape = (T, N, *trailing)
    rewards = torch.randn(shape, generator=g, dtype=torch.float64)
    values = torch.randn(shape, generator=g, dtype=torch.float64)
    dones = torch.rand(shape, generator=g) < 0.3
    bootstrap = torch.randn(shape[1:], generator=g, dtype=torch.float64)
    return rewards, values, dones, bootstrap


def _reference_gae(rewards, values, dones, bootstrap, gamma, lam):
    """Plain scalar loop over envs then time, written from the paper."""
    T, N = rewards.shape
    adv = [[0.0] * N for _ in range(T)]
    for n in range(N):
        running = 0.0
        next_v = float(bootstrap[n])
        for t in reversed(range(T)):
            cont = 0.0 if bool(dones[t, n]) else 1.0
            delta = float(rewards[t, n]) + gamma * next_v * cont - float(values[t, n])
            running = delta + gamma * lam * cont * running
            adv[t][n] = running
            next_v = float(values[t, n])
    return torch.tensor(adv, dtype=torch.float64)


@pytest.mark.parametrize("seed", SEEDS)
def test_gae_matches_scalar_loop(seed):
    g = torch.Generator().manual_seed(1000 + seed)
    gamma, lam = torch.rand(2, generator=g, dtype=torch.float64).tolist()
    rewards, values, dones, bootstrap = _random_rollout(seed)
    adv, ret = compute_gae(rewards, values, dones, bootstrap, gamma, lam)
    expected = _reference_gae(rewards, values, dones, bootstrap, gamma, lam)
    torch.testing.assert_close(adv, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(ret, expected + values, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_lambda_one_gives_discounted_monte_carlo_returns(seed):
    rewards, values, dones, bootstrap = _random_rollout(seed)
    _, ret = compute_gae(rewards, values, dones, bootstrap, 0.9, 1.0)
    mc = compute_discounted_returns(rewards, dones, bootstrap, 0.9)
    torch.testing.assert_close(ret, mc, rtol=0, atol=1e-12)
    # And directly from the definition: sum_k gamma^k r_{t+k} up to the
    # episode end, plus gamma^(T-t) V_T if the episode did not end.
    T, N = rewards.shape
    for n in range(N):
        for t in range(T):
            total, discount = 0.0, 1.0
            for k in range(t, T):
                total += discount * float(rewards[k, n])
                discount *= 0.9
                if dones[k, n]:
                    break
            else:
                total += discount * float(bootstrap[n])
            assert abs(total - float(mc[t, n])) < 1e-12


def test_lambda_zero_gives_one_step_td_error():
    rewards, values, dones, bootstrap = _random_rollout(3)
    adv, _ = compute_gae(rewards, values, dones, bootstrap, 0.9, 0.0)
    next_values = torch.cat([values[1:], bootstrap[None]], dim=0)
    td = rewards + 0.9 * next_values * (~dones) - values
    torch.testing.assert_close(adv, td, rtol=0, atol=1e-12)


def test_trailing_dims_match_flat_computation():
    rewards, values, dones, bootstrap = _random_rollout(4, trailing=(1,))
    adv, ret = compute_gae(rewards, values, dones, bootstrap, 0.99, 0.95)
    flat_adv, flat_ret = compute_gae(
        rewards[..., 0],
        values[..., 0],
        dones[..., 0],
        bootstrap[..., 0],
        0.99,
        0.95,
    )
    torch.testing.assert_close(adv[..., 0], flat_adv, rtol=0, atol=0)
    torch.testing.assert_close(ret[..., 0], flat_ret, rtol=0, atol=0)


def test_inputs_are_not_written():
    inputs = _random_rollout(5)
    copies = [x.clone() for x in inputs]
    compute_gae(*inputs, 0.99, 0.95)
    compute_discounted_returns(inputs[0], inputs[2], inputs[3], 0.99)
    for before, after in zip(copies, inputs):
        assert torch.equal(before, after)


def test_done_at_last_step_ignores_bootstrap():
    rewards, values, dones, bootstrap = _random_rollout(6)
    dones[-1] = True
    a1, r1 = compute_gae(rewards, values, dones, bootstrap, 0.99, 0.95)
    a2, r2 = compute_gae(rewards, values, dones, bootstrap + 1e6, 0.99, 0.95)
    assert torch.equal(a1, a2) and torch.equal(r1, r2)


def test_dones_from_next_masks_shifts_by_one():
    # habitat layout: masks[t + 1] = not done after acting at t; masks[0] and
    # anything past num_steps belong to other rollouts.
    masks = torch.tensor([[False], [True], [False], [True], [False]])
    dones = dones_from_next_masks(masks, num_steps=3)
    assert dones.dtype == torch.bool
    assert dones.tolist() == [[False], [True], [False]]


def test_dones_from_next_masks_rejects_short_buffer():
    with pytest.raises(ValueError, match="need at least num_steps \\+ 1 = 4"):
        dones_from_next_masks(torch.ones(3, 2, dtype=torch.bool), num_steps=3)


def test_rejects_float_dones():
    rewards, values, dones, bootstrap = _random_rollout(7)
    with pytest.raises(TypeError, match="dones must be a bool tensor"):
        compute_gae(rewards, values, dones.double(), bootstrap, 0.99, 0.95)


def test_rejects_mismatched_shapes():
    rewards, values, dones, bootstrap = _random_rollout(8)
    with pytest.raises(ValueError, match="bootstrap_value shape"):
        compute_gae(rewards, values, dones, bootstrap[:-1], 0.99, 0.95)
    with pytest.raises(ValueError, match="values shape"):
        compute_gae(rewards, values[:-1], dones, bootstrap, 0.99, 0.95)
    with pytest.raises(ValueError, match="dones shape"):
        compute_discounted_returns(rewards, dones[:-1], bootstrap, 0.99)
    with pytest.raises(ValueError, match="time-major"):
        compute_discounted_returns(rewards[0], dones[0], bootstrap, 0.99)


def test_time_limit_truncation_bootstraps_from_the_value_after_the_cut():
    # _hand_example with env 0's episode cut by a time limit after t=1, the
    # state after the cut valued 6; gamma = lambda = 0.5.
    # env 0: t=2: A2 = 3 (as before)
    #        t=1: r' = 2 + 0.5*6 = 5, delta = 5 - 1 = 4, A1 = 4 (nothing
    #             carried across the cut)
    #        t=0: delta = 1, A0 = 1 + 0.25*4 = 2
    # env 1 unchanged. Returns = A + V. Without GAE (gamma = 0.5):
    #   env 0: R2 = 5, R1 = 2 + 0.5*6 = 5, R0 = 1 + 0.5*5 = 3.5
    rewards, values, dones, bootstrap = _hand_example()
    truncated = torch.zeros_like(dones)
    truncated[1, 0] = True
    after_cut = torch.full_like(values, float("nan"))  # read only where truncated
    after_cut[1, 0] = 6.0
    adv, ret = compute_gae(
        rewards,
        values,
        dones,
        bootstrap,
        0.5,
        0.5,
        truncated=truncated,
        truncation_values=after_cut,
    )
    torch.testing.assert_close(adv, torch.tensor([[2.0, -0.5625], [4.0, -0.25], [3.0, 1.0]]))
    torch.testing.assert_close(ret, torch.tensor([[2.5, 0.4375], [5.0, 0.75], [5.0, 2.0]]))
    ret = compute_discounted_returns(
        rewards, dones, bootstrap, 0.5, truncated=truncated, truncation_values=after_cut
    )
    torch.testing.assert_close(ret, torch.tensor([[3.5, 0.5], [5.0, 1.0], [5.0, 2.0]]))
    # The same example as back-to-back sequences: tests/updaters/test_return_estimators.py.


@pytest.mark.parametrize("seed", SEEDS)
def test_a_cut_valued_at_the_next_state_is_a_td0_step_across(seed):
    # With lambda = 0, A_t = r_t + gamma * V_{t+1} - V_t: a cut at t whose
    # value after is V_{t+1} gives the advantage of not ending there.
    rewards, values, dones, bootstrap = _random_rollout(seed)
    dones[:] = False
    cut = dones.clone()
    cut[2] = True
    after = torch.cat([values[1:], bootstrap[None]], 0)
    adv_cut, _ = compute_gae(
        rewards, values, cut, bootstrap, 0.9, 0.0, truncated=cut, truncation_values=after
    )
    adv, _ = compute_gae(rewards, values, dones, bootstrap, 0.9, 0.0)
    torch.testing.assert_close(adv_cut, adv)


def test_truncation_errors_are_named():
    rewards, values, dones, bootstrap = _hand_example()
    truncated = torch.zeros_like(dones)
    truncated[0, 0] = True  # not done there
    with pytest.raises(ValueError, match="truncated must imply dones"):
        compute_gae(
            rewards,
            values,
            dones,
            bootstrap,
            0.5,
            0.5,
            truncated=truncated,
            truncation_values=values,
        )
    with pytest.raises(ValueError, match="needs truncation_values"):
        compute_gae(rewards, values, dones, bootstrap, 0.5, 0.5, truncated=dones)
    with pytest.raises(TypeError, match="bool"):
        compute_gae(
            rewards,
            values,
            dones,
            bootstrap,
            0.5,
            0.5,
            truncated=dones.float(),
            truncation_values=values,
        )
