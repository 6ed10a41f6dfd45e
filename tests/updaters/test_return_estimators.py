"""The return-estimator registry and the layouts an estimator is handed."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from gym import spaces

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_baselines.common.rollout_storage import RolloutStorage

from habitat_ver.algo.gae import compute_gae
from habitat_ver.storage.return_steps import RolloutSteps
from habitat_ver.storage.rollout_storage import LockstepRolloutStorage
from habitat_ver.updaters.gae_targets import GAETargets
from habitat_ver.updaters.targets import (
    build_return_estimator,
    register_return_estimator,
    resolve_return_estimator,
    return_estimator_names,
    unregister_return_estimator,
)
from habitat_ver.updaters.vtrace_targets import VTraceTargets
from habitat_ver.common.capabilities import ROLLOUT_STEPS
from habitat_ver.trainers.appo import AppoTrainer
from habitat_ver.trainers.ddppo import DDPPOTrainer
from habitat_ver.trainers.ver import VERTrainer

from .toy_estimator import RewardToGo

DDPPO, VER, APPO = DDPPOTrainer.PROVIDES, VERTrainer.PROVIDES, AppoTrainer.PROVIDES


def test_registered_names_and_what_auto_means():
    assert return_estimator_names() == ("gae", "vtrace")
    assert return_estimator_names(DDPPO) == return_estimator_names(VER) == ("gae",)
    assert return_estimator_names(APPO) == ("vtrace",)
    assert resolve_return_estimator("auto", VER) == "gae"
    assert resolve_return_estimator("auto", APPO) == "vtrace"
    ppo = SimpleNamespace(gamma=0.5, tau=0.25, use_gae=False, use_normalized_advantage=True)
    appo = SimpleNamespace(vtrace_rho_clip=2.0, vtrace_c_clip=0.5)
    config = SimpleNamespace(
        habitat_baselines=SimpleNamespace(rl=SimpleNamespace(ppo=ppo, appo=appo))
    )
    assert build_return_estimator("gae", config) == GAETargets(0.5, 0.25, use_gae=False)
    assert build_return_estimator("vtrace", config) == VTraceTargets(0.5, 2.0, 0.5, True)


def test_registry_refuses_overwrites_auto_and_unknown_names():
    register_return_estimator("sum", lambda config: RewardToGo(), needs=(ROLLOUT_STEPS,))
    try:
        assert return_estimator_names(DDPPO) == ("gae", "sum")
        assert return_estimator_names(APPO) == ("vtrace",)
        with pytest.raises(ValueError, match="'sum' is already registered"):
            register_return_estimator("sum", lambda config: RewardToGo())
    finally:
        unregister_return_estimator("sum")
    with pytest.raises(ValueError, match="'auto' is reserved"):
        register_return_estimator("auto", lambda config: RewardToGo())
    registered = r"no return estimator 'sum': registered are \('gae', 'vtrace'\)"
    with pytest.raises(KeyError, match=registered):
        build_return_estimator("sum", None)


def test_sequences_reach_a_time_major_estimator_through_the_grid():
    # Sequences [1, 2] (not done) and [4]: reward-to-go [3, 2] and [4]; a
    # done step ends the sum: [1 (done), 2] gives [1, 2].
    steps = RolloutSteps(
        torch.tensor([[1.0], [2.0], [4.0]]),
        torch.zeros(3, 1),
        torch.tensor([[False], [False], [False]]),
        torch.zeros(2, 1),
        lengths=torch.tensor([2, 1]),
    )
    assert RewardToGo().sequence_returns(steps).view(-1).tolist() == [3.0, 2.0, 4.0]
    ended = steps._replace(dones=torch.tensor([[True], [False], [False]]))
    assert RewardToGo().sequence_returns(ended).view(-1).tolist() == [1.0, 2.0, 4.0]


def _gae_loop(steps, gamma, gae_lambda):
    """Reference: GAE's returns written plainly, one sequence and one step at
    a time (Schulman et al. 2016, eq. 16, cut at episode ends)."""
    returns, start = [], 0
    for k, length in enumerate(steps.lengths.tolist()):
        advantage, next_value, part = 0.0, float(steps.bootstrap_values[k]), []
        for i in reversed(range(start, start + length)):
            not_done = 0.0 if bool(steps.dones[i]) else 1.0
            value = float(steps.values[i])
            delta = float(steps.rewards[i]) + gamma * next_value * not_done - value
            advantage = delta + gamma * gae_lambda * not_done * advantage
            part.append(advantage + value)
            next_value = value
        returns += reversed(part)
        start += length
    return torch.tensor(returns).view(-1, 1)


def _gae_of_each_sequence(steps, gamma, gae_lambda):
    """Reference: compute_gae on every sequence alone, as a one-env time-major
    rollout, the results back to back."""
    returns, start = [], 0
    for k, length in enumerate(steps.lengths.tolist()):
        rows = slice(start, start + length)
        _, ret = compute_gae(
            steps.rewards[rows, None],
            steps.values[rows, None],
            steps.dones[rows, None],
            steps.bootstrap_values[k : k + 1],
            gamma,
            gae_lambda,
        )
        returns.append(ret[:, 0])
        start += length
    return torch.cat(returns)


@pytest.mark.parametrize("use_gae", [True, False])
def test_gae_on_sequences_is_the_reference_loop_and_gae_of_each_sequence_bit_for_bit(use_gae):
    # VER's sequences go through the grid (RolloutTargets.sequence_returns)
    # into compute_gae: the plain loop's numbers, and each sequence gets
    # exactly the bits of compute_gae on its own steps.  Without use_gae they
    # take GAE with lambda = 1.
    g = torch.Generator().manual_seed(0)
    lengths = torch.tensor([3, 1, 5, 2])
    s = int(lengths.sum())
    steps = RolloutSteps(
        torch.randn(s, 1, generator=g),
        torch.randn(s, 1, generator=g),
        torch.rand(s, 1, generator=g) < 0.3,
        torch.randn(4, 1, generator=g),
        lengths=lengths,
    )
    gae_lambda = 0.8 if use_gae else 1.0
    returns = GAETargets(0.9, 0.8, use_gae=use_gae).sequence_returns(steps)
    torch.testing.assert_close(returns, _gae_loop(steps, 0.9, gae_lambda))
    assert torch.equal(returns, _gae_of_each_sequence(steps, 0.9, gae_lambda))


def test_sequences_with_a_time_limit_cut_give_the_time_major_numbers():
    # tests/algo/test_gae.py's hand example (T=3, N=2, gamma = lambda = 0.5;
    # env 0 cut by a time limit after t=1, the state after the cut valued 6)
    # stored as two sequences back to back, env 0 then env 1: returns
    # env 0 [2.5, 5, 5], env 1 [0.4375, 0.75, 2].
    rewards = torch.tensor([[1.0], [2.0], [3.0], [0.0], [0.0], [1.0]])
    values = torch.tensor([[0.5], [1.0], [2.0], [1.0], [1.0], [1.0]])
    dones = torch.tensor([[False], [True], [False], [False], [False], [False]])
    after_cut = torch.full_like(values, float("nan"))  # read only where cut
    after_cut[1] = 6.0
    steps = RolloutSteps(
        rewards,
        values,
        dones,
        torch.tensor([[4.0], [2.0]]),
        lengths=torch.tensor([3, 3]),
        truncated=dones.clone(),
        truncation_values=after_cut,
    )
    returns = GAETargets(0.5, 0.5).sequence_returns(steps)
    torch.testing.assert_close(returns.view(-1), torch.tensor([2.5, 5.0, 5.0, 0.4375, 0.75, 2.0]))


@pytest.mark.parametrize(
    "lengths, match",
    [
        (torch.tensor([2, 0, 1]), "positive lengths; got \\[2, 0, 1\\]"),
        (torch.tensor([2, 2]), "sum\\(lengths\\) = 4 rows"),
    ],
)
def test_sequences_that_do_not_cut_the_steps_are_one_named_error(lengths, match):
    steps = RolloutSteps(
        torch.zeros(3, 1),
        torch.zeros(3, 1),
        torch.zeros(3, 1, dtype=torch.bool),
        torch.zeros(2, 1),
        lengths=lengths,
    )
    with pytest.raises(ValueError, match=match):
        GAETargets().sequence_returns(steps)


def _filled(cls, seed=0, steps=5, envs=3):
    storage = cls(
        steps,
        envs,
        spaces.Dict({"state": spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)}),
        spaces.Discrete(2),
        SimpleNamespace(num_recurrent_layers=1, recurrent_hidden_size=2),
    )
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        storage.insert(
            value_preds=torch.randn(envs, 1, generator=g),
            rewards=torch.randn(envs, 1, generator=g),
            next_masks=torch.rand(envs, 1, generator=g) > 0.3,
        )
        storage.advance_rollout()
    return storage, torch.randn(envs, 1, generator=g)


def test_an_updater_without_targets_step_gets_the_returns_from_compute_returns():
    # Upstream's PPO reads returns from the storage: the trainer hands our
    # storage the run's estimator, and upstream's compute_returns fills them.
    ours, next_value = _filled(LockstepRolloutStorage)
    upstream, _ = _filled(RolloutStorage)
    ours.returns_for_readers = GAETargets(0.99, 0.95)
    ours.compute_returns(next_value, True, 0.99, 0.95)
    upstream.compute_returns(next_value, True, 0.99, 0.95)
    assert torch.equal(ours.buffers["returns"][:5], upstream.buffers["returns"][:5])


def test_storage_steps_need_compute_returns_and_upstream_storages_keep_their_gae():
    storage, _ = _filled(LockstepRolloutStorage)
    with pytest.raises(RuntimeError, match="call compute_returns"):
        storage.return_steps()
    # Upstream's RolloutStorage computes GAE itself: GAE uses it as stored,
    # another estimator cannot read its steps.
    upstream, next_value = _filled(RolloutStorage)
    upstream.compute_returns(next_value, True, 0.99, 0.95)
    stored = upstream.buffers["returns"].clone()
    updater = SimpleNamespace(get_advantages=lambda rollouts: rollouts.buffers["returns"])
    assert torch.equal(GAETargets().before_epochs(updater, upstream), stored)
    with pytest.raises(TypeError, match="RolloutStorage does not lay out its steps"):
        RewardToGo().before_epochs(updater, upstream)
