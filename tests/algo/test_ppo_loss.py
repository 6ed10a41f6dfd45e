"""Numeric tests for habitat_ver.algo.ppo_loss."""

import math

import pytest
import torch

from habitat_ver.algo.ppo_loss import (
    approx_kl,
    clipped_surrogate_loss,
    clipped_value_loss,
    gated_clipped_value_loss,
    masked_mean,
    normalised_mean,
    value_loss,
)

EPS = 0.2


def _policy_example():
    # ratios 1.5, 0.5, 1.1 against a behaviour policy with log-prob 0.
    log_probs = torch.log(torch.tensor([[1.5], [0.5], [1.1]]))
    behaviour = torch.zeros(3, 1)
    advantages = torch.tensor([[2.0], [-1.0], [1.0]])
    return log_probs.requires_grad_(), behaviour, advantages


def test_clipped_surrogate_hand_computed():
    # eps = 0.2:
    #   i0: rho=1.5, A=2:  surr1 = 3,    surr2 = 1.2*2 = 2.4   min 2.4  -> -2.4
    #   i1: rho=0.5, A=-1: surr1 = -0.5, surr2 = 0.8*-1 = -0.8 min -0.8 -> 0.8
    #   i2: rho=1.1, A=1:  surr1 = surr2 = 1.1                         -> -1.1
    #   loss = (-2.4 + 0.8 - 1.1) / 3 = -0.9
    #   clipped ratios: i0 (1.5 > 1.2) and i1 (0.5 < 0.8) -> 2/3
    # Gradient wrt log_probs: i0, i1 take the clipped (constant) branch -> 0;
    #   i2: d(-rho*A)/dlogp / 3 = -1.1 / 3.
    log_probs, behaviour, advantages = _policy_example()
    out = clipped_surrogate_loss(log_probs, behaviour, advantages, EPS)
    torch.testing.assert_close(out.loss, torch.tensor(-0.9))
    torch.testing.assert_close(out.clip_fraction, torch.tensor(2.0 / 3.0))
    torch.testing.assert_close(out.ratio, torch.tensor([[1.5], [0.5], [1.1]]))
    out.loss.backward()
    torch.testing.assert_close(log_probs.grad, torch.tensor([[0.0], [0.0], [-1.1 / 3.0]]))


def test_clipped_surrogate_weighted_hand_computed():
    # weights 0.5, 1, 1: (0.5*-2.4 + 0.8 - 1.1) / 3 = -1.5 / 3 = -0.5
    log_probs, behaviour, advantages = _policy_example()
    weights = torch.tensor([[0.5], [1.0], [1.0]])
    out = clipped_surrogate_loss(log_probs, behaviour, advantages, EPS, weights=weights)
    torch.testing.assert_close(out.loss, torch.tensor(-0.5))


def test_clipped_surrogate_masked_hand_computed():
    # mask out i2: (-2.4 + 0.8) / 2 = -0.8; clip fraction 2/2 = 1.
    log_probs, behaviour, advantages = _policy_example()
    mask = torch.tensor([[True], [True], [False]])
    out = clipped_surrogate_loss(log_probs, behaviour, advantages, EPS, mask=mask)
    torch.testing.assert_close(out.loss, torch.tensor(-0.8))
    torch.testing.assert_close(out.clip_fraction, torch.tensor(1.0))


def _value_example():
    values = torch.tensor([[1.0], [2.0], [3.0], [1.0]], requires_grad=True)
    old_values = torch.tensor([[0.5], [2.5], [2.0], [0.9]])
    returns = torch.tensor([[2.0], [2.0], [0.0], [0.0]])
    return values, old_values, returns


def test_value_loss_hand_computed():
    # 0.5 * (V - R)^2 = 0.5 * [1, 0, 9, 1]; mean = 5.5 / 4 = 1.375
    # grad = (V - R) / 4 = [-1, 0, 3, 1] / 4
    values, _, returns = _value_example()
    loss = value_loss(values, returns)
    torch.testing.assert_close(loss, torch.tensor(1.375))
    loss.backward()
    torch.testing.assert_close(values.grad, torch.tensor([[-0.25], [0.0], [0.75], [0.25]]))


def test_clipped_value_loss_hand_computed():
    # eps = 0.2, V_clip = V_old + clip(V - V_old, -0.2, 0.2):
    #   i0: V_clip = 0.7: max((1-2)^2, (0.7-2)^2) = max(1, 1.69)   = 1.69
    #   i1: V_clip = 2.3: max(0, 0.09)                              = 0.09
    #   i2: V_clip = 2.2: max(9, 4.84)                              = 9
    #   i3: V_clip = 1.0 (inside the clip range): max(1, 1)         = 1
    #   loss = 0.5 * (1.69 + 0.09 + 9 + 1) / 4 = 1.4725
    # grad: i0, i1 pick the saturated clipped branch -> 0; i2 picks the
    #   unclipped one -> (3 - 0) / 4; i3 both branches equal V -> 1 / 4.
    values, old_values, returns = _value_example()
    loss = clipped_value_loss(values, old_values, returns, EPS)
    torch.testing.assert_close(loss, torch.tensor(1.4725))
    loss.backward()
    torch.testing.assert_close(values.grad, torch.tensor([[0.0], [0.0], [0.75], [0.25]]))


def test_gated_clipped_value_loss_hand_computed():
    # habitat 0.3.x form: |V - V_old| >= 0.2 for i0..i2, so those use the
    # (constant) V_clip; i3 moved 0.1 and keeps V:
    #   0.5 * ((0.7-2)^2 + (2.3-2)^2 + (2.2-0)^2 + (1-0)^2) / 4
    #   = 0.5 * (1.69 + 0.09 + 4.84 + 1) / 4 = 0.9525
    # grad: only i3, (1 - 0) / 4 = 0.25. Note i2 gets no gradient although
    # its unclipped error (9) is larger: not the max() form.
    values, old_values, returns = _value_example()
    loss = gated_clipped_value_loss(values, old_values, returns, EPS)
    torch.testing.assert_close(loss, torch.tensor(0.9525))
    loss.backward()
    torch.testing.assert_close(values.grad, torch.tensor([[0.0], [0.0], [0.0], [0.25]]))


def test_approx_kl_hand_computed():
    # k3 = (rho - 1) - log(rho) for rho = 1.5, 0.5, 1.1, then the mean.
    log_probs, behaviour, _ = _policy_example()
    expected = sum((r - 1) - math.log(r) for r in (1.5, 0.5, 1.1)) / 3
    # = (0.094535 + 0.193147 + 0.004690) / 3 = 0.097457
    kl = approx_kl(log_probs, behaviour)
    assert not kl.requires_grad
    assert abs(float(kl) - expected) < 1e-6
    assert abs(expected - 0.097457) < 1e-6


def test_approx_kl_zero_for_identical_policies():
    lp = torch.randn(10, 1)
    assert float(approx_kl(lp, lp.clone())) == 0.0


def _random_batch(seed, B=12):
    g = torch.Generator().manual_seed(seed)
    return dict(
        log_probs=torch.randn(B, 1, generator=g) * 0.3,
        behaviour=torch.randn(B, 1, generator=g) * 0.3,
        advantages=torch.randn(B, 1, generator=g),
        values=torch.randn(B, 1, generator=g),
        old_values=torch.randn(B, 1, generator=g),
        returns=torch.randn(B, 1, generator=g),
        weights=torch.rand(B, 1, generator=g),
    )


def _all_losses(d, mask=None, weights=None):
    lp = d["log_probs"].clone().requires_grad_()
    v = d["values"].clone().requires_grad_()
    pol = clipped_surrogate_loss(
        lp, d["behaviour"], d["advantages"], EPS, weights=weights, mask=mask
    )
    outs = [
        pol.loss,
        value_loss(v, d["returns"], weights=weights, mask=mask),
        clipped_value_loss(v, d["old_values"], d["returns"], EPS, weights=weights, mask=mask),
        gated_clipped_value_loss(v, d["old_values"], d["returns"], EPS, weights=weights, mask=mask),
    ]
    grads = []
    for out in outs:
        lp.grad, v.grad = None, None
        out.backward()
        grads.append(
            (
                lp.grad.clone() if lp.grad is not None else torch.zeros_like(lp),
                v.grad.clone() if v.grad is not None else torch.zeros_like(v),
            )
        )
    diags = [pol.clip_fraction, approx_kl(lp, d["behaviour"], mask=mask)]
    return [o.detach() for o in outs], grads, diags


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("weighted", [False, True])
def test_masked_out_entries_do_not_change_losses_or_grads(seed, weighted):
    valid = _random_batch(seed)
    garbage = _random_batch(seed + 100, B=5)
    # Padding may hold anything, including non-finite values.
    garbage["advantages"][0] = float("nan")
    garbage["returns"][1] = float("inf")
    garbage["log_probs"][2] = 50.0
    garbage["weights"][3] = float("nan")
    padded = {k: torch.cat([valid[k], garbage[k]]) for k in valid}
    mask = torch.cat([torch.ones(12, 1), torch.zeros(5, 1)]).bool()

    ref_losses, ref_grads, ref_diags = _all_losses(
        valid, weights=valid["weights"] if weighted else None
    )
    losses, grads, diags = _all_losses(
        padded, mask=mask, weights=padded["weights"] if weighted else None
    )
    for a, b in zip(ref_losses + ref_diags, losses + diags):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    for (rlp, rv), (lp, v) in zip(ref_grads, grads):
        torch.testing.assert_close(lp[:12], rlp, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(v[:12], rv, rtol=1e-6, atol=1e-7)
        assert torch.all(lp[12:] == 0) and torch.all(v[12:] == 0)


@pytest.mark.parametrize("seed", range(5))
def test_unit_weights_and_full_mask_equal_unweighted(seed):
    d = _random_batch(seed)
    ref, ref_grads, _ = _all_losses(d)
    ones = torch.ones_like(d["weights"])
    full = torch.ones_like(d["weights"], dtype=torch.bool)
    for kwargs in (dict(weights=ones), dict(mask=full)):
        out, grads, _ = _all_losses(d, **kwargs)
        for a, b in zip(ref, out):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=0)
        for (a1, a2), (b1, b2) in zip(ref_grads, grads):
            torch.testing.assert_close(a1, b1, rtol=1e-6, atol=0)
            torch.testing.assert_close(a2, b2, rtol=1e-6, atol=0)


def test_masked_mean_all_false_mask_is_zero_not_nan():
    x = torch.randn(4, 1)
    mask = torch.zeros(4, 1, dtype=torch.bool)
    assert float(masked_mean(x, mask)) == 0.0


def test_masked_mean_hand_computed():
    # (2*1 + 0.5*3) / 2 valid entries = 1.75; the masked 100 is ignored.
    x = torch.tensor([1.0, 3.0, 100.0])
    w = torch.tensor([2.0, 0.5, 7.0])
    m = torch.tensor([True, True, False])
    torch.testing.assert_close(masked_mean(x, m, w), torch.tensor(1.75))


def test_normalised_mean_divides_by_the_weights_sum():
    x = torch.tensor([[1.0], [3.0], [5.0]])
    w = torch.tensor([[0.5], [0.25], [1.0]])
    # (0.5 * 1 + 0.25 * 3 + 1 * 5) / 1.75 = 6.25 / 1.75
    torch.testing.assert_close(normalised_mean(x, None, w), torch.tensor(6.25 / 1.75))
    mask = torch.tensor([[True], [True], [False]])
    torch.testing.assert_close(normalised_mean(x, mask, w), torch.tensor(1.25 / 0.75))
    torch.testing.assert_close(normalised_mean(x, mask), torch.tensor(2.0))
    assert float(normalised_mean(x, torch.zeros_like(mask))) == 0.0
