"""LockstepRolloutStorage must compute exactly what upstream's storage does."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import habitat_ver  # noqa: F401  (enables sim-free mode before habitat imports)
from gym import spaces
from habitat_baselines.common.rollout_storage import RolloutStorage
from habitat_baselines.rl.ppo.ppo import PPO

from habitat_ver.storage.rollout_storage import LockstepRolloutStorage
from habitat_ver.updaters.gae_targets import GAETargets

NUM_STEPS, NUM_ENVS = 6, 4


def _make(cls, double_buffered=False, num_envs=NUM_ENVS):
    obs_space = spaces.Dict({"state": spaces.Box(-1.0, 1.0, (3,), dtype=np.float32)})
    actor_critic = SimpleNamespace(num_recurrent_layers=2, recurrent_hidden_size=5)
    return cls(
        NUM_STEPS,
        num_envs,
        obs_space,
        spaces.Discrete(3),
        actor_critic,
        is_double_buffered=double_buffered,
    )


def _fill(storages, seed, num_steps, double_buffered, done_prob=0.3):
    """Inserts the same random steps into every storage, habitat-style."""
    g = torch.Generator().manual_seed(seed)
    nbuf = 2 if double_buffered else 1
    width = NUM_ENVS // nbuf
    for _ in range(num_steps):
        for buf in range(nbuf):
            step = dict(
                next_observations={"state": torch.randn(width, 3, generator=g)},
                next_recurrent_hidden_states=torch.randn(width, 2, 5, generator=g),
                actions=torch.randint(0, 3, (width, 1), generator=g),
                action_log_probs=torch.randn(width, 1, generator=g),
                value_preds=torch.randn(width, 1, generator=g),
                rewards=torch.randn(width, 1, generator=g),
                next_masks=torch.rand(width, 1, generator=g) > done_prob,
            )
            for s in storages:
                s.insert(**step, buffer_index=buf)
                s.advance_rollout(buf)
    return torch.randn(NUM_ENVS, 1, generator=g)


def _assert_buffers_equal(a, b, num_steps):
    """Equal to upstream, except returns rows >= num_steps: NaN in ours."""
    keys_a, vals_a = a.buffers.flatten()
    keys_b, vals_b = b.buffers.flatten()
    assert keys_a == keys_b
    for k, va, vb in zip(keys_a, vals_a, vals_b):
        if k == ("returns",):
            assert torch.isnan(va[num_steps:]).all()
            va, vb = va[:num_steps], vb[:num_steps]
        assert torch.equal(va, vb), k


CASES = [
    # (use_gae, double_buffered, steps collected: full or preempted early)
    (True, False, NUM_STEPS),
    (False, False, NUM_STEPS),
    (True, True, NUM_STEPS),
    (False, True, NUM_STEPS),
    (True, False, 2),
    (False, False, 3),
]


@pytest.mark.parametrize("use_gae,double_buffered,num_steps", CASES)
@pytest.mark.parametrize("seed", range(5))
def test_compute_returns_equals_upstream(use_gae, double_buffered, num_steps, seed):
    ours = _make(LockstepRolloutStorage, double_buffered)
    upstream = _make(RolloutStorage, double_buffered)
    # Two rollouts, so the second starts from after_update's carried slot 0.
    for rollout in range(2):
        next_value = _fill([ours, upstream], seed * 10 + rollout, num_steps, double_buffered)
        ours.compute_returns(next_value, use_gae, 0.99, 0.95)
        GAETargets(0.99, 0.95, use_gae=use_gae).fill_returns(ours)
        upstream.compute_returns(next_value, use_gae, 0.99, 0.95)
        _assert_buffers_equal(ours, upstream, num_steps)
        ours.after_update()
        upstream.after_update()


def test_episode_end_mid_rollout_hand_computed():
    # The T=3, N=2 example of tests/algo/test_gae.py written through habitat's
    # layout: env 0's episode ends after step 1, so masks[2] is False for it.
    # gamma = tau = 0.5 gives returns [[1.75, 0.4375], [2, 0.75], [5, 2]].
    storage = _make(LockstepRolloutStorage, num_envs=2)
    rewards = [[1.0, 0.0], [2.0, 0.0], [3.0, 1.0]]
    values = [[0.5, 1.0], [1.0, 1.0], [2.0, 1.0]]
    next_masks = [[True, True], [False, True], [True, True]]
    for t in range(3):
        storage.insert(
            value_preds=torch.tensor(values[t])[:, None],
            rewards=torch.tensor(rewards[t])[:, None],
            next_masks=torch.tensor(next_masks[t])[:, None],
        )
        storage.advance_rollout()
    storage.compute_returns(torch.tensor([[4.0], [2.0]]), True, 0.5, 0.5)
    GAETargets(0.5, 0.5).fill_returns(storage)
    torch.testing.assert_close(
        storage.buffers["returns"][:3, :, 0],
        torch.tensor([[1.75, 0.4375], [2.0, 0.75], [5.0, 2.0]]),
    )
    # Without GAE: [[2, 0.5], [2, 1], [5, 2]] (see test_gae.py).
    storage.compute_returns(torch.tensor([[4.0], [2.0]]), False, 0.5, 0.5)
    GAETargets(0.5, 0.5, use_gae=False).fill_returns(storage)
    torch.testing.assert_close(
        storage.buffers["returns"][:3, :, 0],
        torch.tensor([[2.0, 0.5], [2.0, 1.0], [5.0, 2.0]]),
    )


def test_uses_upstream_constructor_and_data_generator():
    storage = _make(LockstepRolloutStorage, double_buffered=True)
    assert isinstance(storage, RolloutStorage)
    next_value = _fill([storage], 0, NUM_STEPS, double_buffered=True)
    storage.compute_returns(next_value, True, 0.99, 0.95)
    GAETargets(0.99, 0.95).fill_returns(storage)
    advantages = storage.buffers["returns"] - storage.buffers["value_preds"]
    batches = list(storage.data_generator(advantages, 2))
    assert len(batches) == 2
    assert batches[0]["returns"].shape == (NUM_STEPS * NUM_ENVS // 2, 1)


def test_compute_returns_needs_the_value_after_the_last_step():
    storage = _make(LockstepRolloutStorage)
    _fill([storage], 0, NUM_STEPS, double_buffered=False)
    with pytest.raises(ValueError, match=r"needs next_value, the value after the last step"):
        storage.compute_returns(None, True, 0.99, 0.95)


def test_advantage_statistics_cover_only_the_rows_learnt_on():
    # Rollout 1: T=3 full steps (their rows stay in the buffer). Rollout 2 is
    # preempted after 1 step: values [1, 3], rewards [2, 1], not done,
    # next_value [0, 1], gamma = tau = 0.5 give returns [2 + 0.5 * 0,
    # 1 + 0.5 * 1] = [2, 1.5] and advantages [1, -1.5]: mean -0.25,
    # unbiased var (1.25^2 + 1.25^2) / 1 = 3.125, so the normalised
    # advantages are +-1.25 / sqrt(3.125) = +-0.70711. Upstream's statistics
    # also took rows 1..3 (8 rows instead of 2).
    storage = _make(LockstepRolloutStorage, num_envs=2)
    for t in range(3):
        storage.insert(
            value_preds=torch.full((2, 1), 5.0 + t),
            rewards=torch.full((2, 1), 10.0 * t),
            next_masks=torch.ones(2, 1, dtype=torch.bool),
        )
        storage.advance_rollout()
    storage.compute_returns(torch.full((2, 1), 7.0), True, 0.5, 0.5)
    GAETargets(0.5, 0.5).fill_returns(storage)
    storage.after_update()
    storage.insert(
        value_preds=torch.tensor([[1.0], [3.0]]),
        rewards=torch.tensor([[2.0], [1.0]]),
        next_masks=torch.ones(2, 1, dtype=torch.bool),
    )
    storage.advance_rollout()
    storage.compute_returns(torch.tensor([[0.0], [1.0]]), True, 0.5, 0.5)
    GAETargets(0.5, 0.5).fill_returns(storage)
    ppo = SimpleNamespace(use_normalized_advantage=True, _compute_var_mean=PPO._compute_var_mean)
    advantages = PPO.get_advantages(ppo, storage)
    assert int(torch.isfinite(advantages).sum()) == 2
    torch.testing.assert_close(
        advantages[0, :, 0], torch.tensor([0.70711, -0.70711]), atol=1e-5, rtol=0
    )
