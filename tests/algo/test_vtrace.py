"""Numeric tests for habitat_ver.algo.vtrace."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from habitat_ver.algo.gae import compute_gae
from habitat_ver.algo.vtrace import vtrace


def _hand_example():
    """T=3, N=1; the episode ends after step 1; gamma = 0.5."""
    rewards = torch.tensor([[1.0], [2.0], [3.0]])
    values = torch.tensor([[0.5], [1.0], [2.0]])
    dones = torch.tensor([[False], [True], [False]])
    return rewards, values, dones, torch.tensor([4.0])


def test_on_policy_equals_n_step_returns_hand_computed():
    # All ratios 1, rho_bar = c_bar = 1, gamma = 0.5:
    #   v2 = 3 + 0.5*4           = 5     A2 = 3 + 0.5*4 - 2     = 3
    #   v1 = 2 (episode ended)   = 2     A1 = 2 - 1             = 1
    #   v0 = 1 + 0.5*v1 = 1 + 1  = 2     A0 = 1 + 0.5*2 - 0.5   = 1.5
    rewards, values, dones, boot = _hand_example()
    logp = torch.log(torch.full((3, 1), 0.3))
    out = vtrace(logp, logp, rewards, values, dones, boot, gamma=0.5)
    torch.testing.assert_close(out.vs, torch.tensor([[2.0], [2.0], [5.0]]))
    torch.testing.assert_close(out.pg_advantages, torch.tensor([[1.5], [1.0], [3.0]]))
    adv, ret = compute_gae(rewards, values, dones, boot, 0.5, 1.0)
    torch.testing.assert_close(out.vs, ret)
    torch.testing.assert_close(out.pg_advantages, adv)


def test_time_limit_truncation_bootstraps_from_the_value_after_the_cut():
    # _hand_example with the episode cut by a time limit after step 1 and
    # the state after the cut valued 6; on-policy, gamma = 0.5:
    #   v2 = 5, A2 = 3 (as before)
    #   t=1: r' = 2 + 0.5*6 = 5: v1 = 5, A1 = 5 - 1 = 4
    #   t=0: delta = 1 + 0.5*1 - 0.5 = 1, v0 = 0.5 + 1 + 0.5*(v1 - V1 = 4) = 3.5,
    #        A0 = 1 + 0.5*v1 - 0.5 = 3
    rewards, values, dones, boot = _hand_example()
    after_cut = torch.tensor([[float("nan")], [6.0], [float("nan")]])
    logp = torch.log(torch.full((3, 1), 0.3))
    out = vtrace(
        logp,
        logp,
        rewards,
        values,
        dones,
        boot,
        gamma=0.5,
        truncated=dones.clone(),
        truncation_values=after_cut,
    )
    torch.testing.assert_close(out.vs, torch.tensor([[3.5], [5.0], [5.0]]))
    torch.testing.assert_close(out.pg_advantages, torch.tensor([[3.0], [4.0], [3.0]]))
    adv, ret = compute_gae(
        rewards, values, dones, boot, 0.5, 1.0, truncated=dones.clone(), truncation_values=after_cut
    )
    torch.testing.assert_close(out.vs, ret)
    torch.testing.assert_close(out.pg_advantages, adv)


def test_off_policy_hand_computed():
    # pi/mu = [0.5/0.25, 0.25/0.5] = [2, 0.5]; V = [0.5, 1], r = [1, 2],
    # V_T = 2, gamma = 0.5, no episode end.
    behaviour = torch.log(torch.tensor([[0.25], [0.5]]))
    target = torch.log(torch.tensor([[0.5], [0.25]]))
    r, v = torch.tensor([[1.0], [2.0]]), torch.tensor([[0.5], [1.0]])
    d, boot = torch.zeros(2, 1, dtype=torch.bool), torch.tensor([2.0])
    # rho_bar = c_bar = 1: rho = c = [1, 0.5]
    #   delta1 = 0.5*(2 + 0.5*2 - 1) = 1      v1 = 1 + 1               = 2
    #   delta0 = 1*(1 + 0.5*1 - 0.5) = 1      v0 = 0.5 + 1 + 0.5*1*1   = 2
    #   A1 = 0.5*(2 + 0.5*2 - 1) = 1          A0 = 1*(1 + 0.5*2 - 0.5) = 1.5
    out = vtrace(behaviour, target, r, v, d, boot, 0.5, 1.0, 1.0)
    torch.testing.assert_close(out.vs, torch.tensor([[2.0], [2.0]]))
    torch.testing.assert_close(out.pg_advantages, torch.tensor([[1.5], [1.0]]))
    torch.testing.assert_close(out.clipped_rhos, torch.tensor([[1.0], [0.5]]))
    # rho_bar = 2, c_bar = 0.5: rho = [2, 0.5], c = [0.5, 0.5]
    #   delta1 = 1, v1 = 2;  delta0 = 2*1 = 2, v0 = 0.5 + 2 + 0.5*0.5*1 = 2.75
    #   A1 = 1;  A0 = 2*(1 + 0.5*2 - 0.5) = 3
    out = vtrace(behaviour, target, r, v, d, boot, 0.5, 2.0, 0.5)
    torch.testing.assert_close(out.vs, torch.tensor([[2.75], [2.0]]))
    torch.testing.assert_close(out.pg_advantages, torch.tensor([[3.0], [1.0]]))


def _loop_reference(mu, pi, r, v, d, boot, gamma, rho_bar, c_bar):
    """IMPALA eq. 1 as an explicit sum, cut at episode ends (floats, loops)."""
    T, N = len(r), len(r[0])
    vs = [[0.0] * N for _ in range(T)]
    adv = [[0.0] * N for _ in range(T)]
    ratio = lambda t, n: math.exp(pi[t][n] - mu[t][n])  # noqa: E731
    value = lambda t, n: boot[n] if t == T else v[t][n]  # noqa: E731
    for n in range(N):
        for s in range(T):
            total, trace = v[s][n], 1.0
            for t in range(s, T):
                nd = 0.0 if d[t][n] else 1.0
                delta = min(rho_bar, ratio(t, n)) * (
                    r[t][n] + gamma * nd * value(t + 1, n) - v[t][n]
                )
                total += gamma ** (t - s) * trace * delta
                if d[t][n]:
                    break
                trace *= min(c_bar, ratio(t, n))
            vs[s][n] = total
    for n in range(N):
        for s in range(T):
            nd = 0.0 if d[s][n] else 1.0
            nxt = boot[n] if s == T - 1 else vs[s + 1][n]
            adv[s][n] = min(rho_bar, ratio(s, n)) * (r[s][n] + gamma * nd * nxt - v[s][n])
    return torch.tensor(vs, dtype=torch.float64), torch.tensor(adv, dtype=torch.float64)


@settings(max_examples=50, deadline=None)
@given(
    t=st.integers(1, 7),
    n=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    gamma=st.sampled_from([0.0, 0.5, 0.99, 1.0]),
    rho_bar=st.sampled_from([0.5, 1.0, 2.0]),
    c_bar=st.sampled_from([0.5, 1.0, 2.0]),
)
def test_matches_loop_reference_on_random_data(t, n, seed, gamma, rho_bar, c_bar):
    g = torch.Generator().manual_seed(seed)
    mu = torch.randn(t, n, generator=g, dtype=torch.float64) * 0.5
    pi = torch.randn(t, n, generator=g, dtype=torch.float64) * 0.5
    r = torch.randn(t, n, generator=g, dtype=torch.float64)
    v = torch.randn(t, n, generator=g, dtype=torch.float64)
    d = torch.rand(t, n, generator=g) < 0.3
    boot = torch.randn(n, generator=g, dtype=torch.float64)
    out = vtrace(mu, pi, r, v, d, boot, gamma, rho_bar, c_bar)
    ref_vs, ref_adv = _loop_reference(
        mu.tolist(),
        pi.tolist(),
        r.tolist(),
        v.tolist(),
        d.tolist(),
        boot.tolist(),
        gamma,
        rho_bar,
        c_bar,
    )
    torch.testing.assert_close(out.vs, ref_vs)
    torch.testing.assert_close(out.pg_advantages, ref_adv)
    # Equal policies, rho_bar = c_bar = 1: GAE(lambda = 1).
    same = vtrace(mu, mu, r, v, d, boot, gamma, 1.0, 1.0)
    adv, ret = compute_gae(r, v, d, boot, gamma, 1.0)
    torch.testing.assert_close(same.vs, ret)
    torch.testing.assert_close(same.pg_advantages, adv)


def test_outputs_carry_no_gradient_and_inputs_are_untouched():
    rewards, values, dones, boot = _hand_example()
    values = values.clone().requires_grad_(True)
    target = torch.zeros(3, 1, requires_grad=True)
    before = values.detach().clone()
    out = vtrace(torch.zeros(3, 1), target, rewards, values, dones, boot, 0.5)
    assert not out.vs.requires_grad and not out.pg_advantages.requires_grad
    assert torch.equal(values.detach(), before)


def test_error_paths():
    rewards, values, dones, boot = _hand_example()
    logp = torch.zeros(3, 1)
    with pytest.raises(ValueError, match="target_log_probs shape"):
        vtrace(logp, torch.zeros(2, 1), rewards, values, dones, boot, 0.5)
    with pytest.raises(ValueError, match="must be > 0"):
        vtrace(logp, logp, rewards, values, dones, boot, 0.5, vtrace_rho_clip=0.0)
    with pytest.raises(TypeError, match="bool"):
        vtrace(logp, logp, rewards, values, dones.float(), boot, 0.5)


def test_rho_c_one_matches_loop_reference_with_episode_ends_mid_trajectory():
    # Deterministic companion of the property test: every env has at least
    # one episode end strictly inside the trajectory, ratios on both sides of 1.
    g = torch.Generator().manual_seed(7)
    t, n = 8, 3
    mu = torch.randn(t, n, generator=g, dtype=torch.float64) * 0.5
    pi = torch.randn(t, n, generator=g, dtype=torch.float64) * 0.5
    r = torch.randn(t, n, generator=g, dtype=torch.float64)
    v = torch.randn(t, n, generator=g, dtype=torch.float64)
    boot = torch.randn(n, generator=g, dtype=torch.float64)
    d = torch.zeros(t, n, dtype=torch.bool)
    d[2, 0] = d[5, 0] = d[3, 1] = d[6, 2] = True
    ratios = torch.exp(pi - mu)
    assert (ratios > 1).any() and (ratios < 1).any()
    out = vtrace(mu, pi, r, v, d, boot, 0.9, 1.0, 1.0)
    ref_vs, ref_adv = _loop_reference(
        mu.tolist(), pi.tolist(), r.tolist(), v.tolist(), d.tolist(), boot.tolist(), 0.9, 1.0, 1.0
    )
    torch.testing.assert_close(out.vs, ref_vs)
    torch.testing.assert_close(out.pg_advantages, ref_adv)
    # An episode end cuts the trace: v_s at the step that ended the episode
    # is V_s + rho_s (r_s - V_s), whatever follows.
    rho = ratios.clamp(max=1.0)
    torch.testing.assert_close(out.vs[2, 0], v[2, 0] + rho[2, 0] * (r[2, 0] - v[2, 0]))


def test_on_policy_targets_with_c_bar_below_one_are_td_lambda_returns():
    # With pi = mu every ratio is 1, so c_s = c_bar: the recursion
    # v_s - V_s = delta_s + gamma nd_s c_bar (v_{s+1} - V_{s+1}) is GAE's with
    # lambda = c_bar, and v_s are GAE(lambda)'s returns (what appo_cartpole's
    # vtrace_c_clip=0.8 relies on). Hand case, T=2, no end, gamma=0.5, c_bar=0.5:
    #   delta1 = 2 + 0.5*2 - 1 = 2,  v1 = 1 + 2 = 3
    #   delta0 = 1 + 0.5*1 - 0.5 = 1, v0 = 0.5 + 1 + 0.5*0.5*2 = 2
    logp = torch.zeros(2, 1)
    r, v = torch.tensor([[1.0], [2.0]]), torch.tensor([[0.5], [1.0]])
    d, boot = torch.zeros(2, 1, dtype=torch.bool), torch.tensor([2.0])
    out = vtrace(logp, logp, r, v, d, boot, 0.5, 1.0, 0.5)
    torch.testing.assert_close(out.vs, torch.tensor([[2.0], [3.0]]))
    _, returns = compute_gae(r, v, d, boot, 0.5, 0.5)
    torch.testing.assert_close(out.vs, returns)
    g = torch.Generator().manual_seed(3)
    r, v = torch.randn(9, 4, generator=g), torch.randn(9, 4, generator=g)
    d, boot = torch.rand(9, 4, generator=g) < 0.2, torch.randn(4, generator=g)
    out = vtrace(torch.zeros(9, 4), torch.zeros(9, 4), r, v, d, boot, 0.98, 1.0, 0.8)
    torch.testing.assert_close(out.vs, compute_gae(r, v, d, boot, 0.98, 0.8)[1])
