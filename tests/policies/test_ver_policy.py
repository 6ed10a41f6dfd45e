"""VERPolicy: shapes, sizes, distributions, recurrent layouts, checkpoints."""

import numpy as np
import pytest
import torch

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from gym import spaces
from habitat_baselines.common.rollout_storage import RolloutStorage
from habitat_baselines.rl.models.rnn_state_encoder import (
    build_pack_info_from_dones,
    build_rnn_build_seq_info,
)
from habitat_baselines.rl.ppo.policy import NetPolicy
from habitat_baselines.rl.ppo.ppo import PPO
from omegaconf import OmegaConf

from habitat_ver.policies.ver_policy_config import VERPolicyConfig
from habitat_ver.policies.action_heads import ActionHead, GaussianHead
from habitat_ver.policies.ver_policy import VERPolicy

from .conftest import random_obs

SMALL = VERPolicyConfig(
    base_planes=8, ngroups=4, visual_embedding_size=16, prev_action_embedding_size=4
)
HAB_ACTIONS = spaces.Dict(
    {
        "arm_action": spaces.Box(-1.0, 1.0, (7,), np.float32),
        "base_velocity": spaces.Box(-1.0, 1.0, (2,), np.float32),
    }
)


def _obs_space(size=32, rgb=False):
    d = {
        "head_depth": spaces.Box(0.0, 1.0, (size, size, 1), np.float32),
        "joint": spaces.Box(-np.inf, np.inf, (7,), np.float32),
        "gps_compass": spaces.Box(-np.inf, np.inf, (2,), np.float32),
    }
    if rgb:
        d["head_rgb"] = spaces.Box(0, 255, (size, size, 3), np.uint8)
    return spaces.Dict(d)


def _small_policy(action_space=HAB_ACTIONS, seed=0, hidden_size=16, **kw):
    torch.manual_seed(seed)
    return VERPolicy(_obs_space(), action_space, hidden_size=hidden_size, ver_config=SMALL, **kw)


def _lstm_params(inp, hidden):
    # weight_ih (4H x in), weight_hh (4H x H), two biases of 4H.
    return 4 * hidden * (inp + hidden + 2)


@pytest.mark.parametrize("rgb,channels", [(False, 1), (True, 4)])
def test_paper_sized_policy_shapes_and_parameter_count(rgb, channels):
    space = _obs_space(128, rgb=rgb)
    policy = VERPolicy(space, HAB_ACTIONS)  # 512-wide 2-layer LSTM by default
    assert isinstance(policy, NetPolicy)
    assert policy.num_recurrent_layers == 4  # (h, c) x 2 layers
    assert policy.recurrent_hidden_size == 512
    assert policy.policy_action_space.shape == (9,)
    n = 2
    out = policy.act(
        random_obs(space, n),
        torch.zeros(n, 4, 512),
        torch.zeros(n, 9),
        torch.zeros(n, 1, dtype=torch.bool),
    )
    assert out.actions.shape == (n, 9)
    assert out.action_log_probs.shape == (n, 1) and out.values.shape == (n, 1)
    assert out.rnn_hidden_states.shape == (n, 4, 512)
    encoder = sum(p.numel() for p in policy.net.visual_encoder.parameters())
    expected = (
        encoder
        + 2048 * 512
        + 512  # visual fc
        + (7 * 32 + 32)
        + (2 * 32 + 32)  # previous-action embeddings
        + _lstm_params(512 + 9 + 64, 512)
        + _lstm_params(512, 512)
        + (512 * 14 + 14)
        + (512 * 4 + 4)  # Gaussian heads: mean and log-std
        + 513  # critic
    )
    total = sum(p.numel() for p in policy.parameters())
    print(f"channels={channels}: encoder {encoder}, policy {total}")
    assert total == expected


@pytest.mark.parametrize(
    "cfg",
    [
        {},
        {"use_std_param": True, "log_std_init": -0.5},
        {"use_log_std": False, "use_softplus": True, "min_std": 0.01, "max_std": 2.0},
        {"use_log_std": False, "min_std": 0.05, "max_std": 1.0, "action_activation": ""},
    ],
)
def test_gaussian_log_probs_and_entropy_equal_torch(cfg):
    torch.manual_seed(1)
    head = GaussianHead(6, 3, OmegaConf.create(cfg) if cfg else None)
    with torch.no_grad():  # move off the near-zero init so values differ
        head.linear.weight.normal_(0, 2.0)
    features = torch.randn(5, 6)
    dist = head(features)
    reference = torch.distributions.Normal(dist.mean, dist.std)
    actions = torch.randn(5, 3)
    torch.testing.assert_close(
        dist.log_probs(actions), reference.log_prob(actions).sum(-1, keepdim=True)
    )
    torch.testing.assert_close(dist.entropy(), reference.entropy().sum(-1, keepdim=True))


def test_gaussian_std_is_clamped():
    head = GaussianHead(4, 2, OmegaConf.create({"min_log_std": -1, "max_log_std": 0.5}))
    with torch.no_grad():
        head.linear.weight.fill_(100.0)
    stds = torch.cat([head(torch.full((1, 4), v)).std for v in (-1.0, 1.0)])
    torch.testing.assert_close(stds.min(), torch.tensor(np.exp(-1.0), dtype=torch.float32))
    torch.testing.assert_close(stds.max(), torch.tensor(np.exp(0.5), dtype=torch.float32))


def _std_param_after(head, losses):
    """SGD steps on the std parameter alone, one per sign in ``losses``
    (+1 asks for a larger std, -1 for a smaller one)."""
    optimiser = torch.optim.SGD([head.std_param], lr=0.1)
    for sign in losses:
        entropy = head(torch.zeros(1, 4)).entropy().sum()
        optimiser.zero_grad()
        (-sign * entropy).backward()
        optimiser.step()
        head.project_into_bounds_()
    return head.std_param.detach().clone()


def test_a_clamped_std_parameter_stays_in_bounds_and_can_come_back():
    cfg = OmegaConf.create({"use_std_param": True, "log_std_init": 0.0, "max_log_std": 0.0})
    head = GaussianHead(4, 3, cfg)
    at_bound = _std_param_after(head, [+1] * 5)
    assert torch.equal(at_bound, torch.zeros(3))  # pushed up: held on the bound
    back = _std_param_after(head, [-1] * 3)
    assert (back < -0.1).all()  # and the first push down moves it

    # On the bound the parameter gets the whole gradient (torch's clamp, which
    # upstream uses, passes none there in some torch versions: 2.14 does, 2.6
    # passes it).
    on_bound = GaussianHead(4, 3, cfg)
    on_bound(torch.zeros(1, 4)).entropy().sum().backward()
    torch.testing.assert_close(on_bound.std_param.grad, torch.ones(3))


def test_product_distribution_sums_parts_and_matches_torch():
    space = spaces.Dict(
        {"move": spaces.Discrete(4), "arm": spaces.Box(-1, 1, (2,)), "grip": spaces.Discrete(3)}
    )
    torch.manual_seed(2)
    head = ActionHead(5, space)
    with torch.no_grad():
        for h in head.heads:
            h.linear.weight.normal_(0, 1.0)
    dist = head(torch.randn(7, 5))
    actions = dist.sample()
    assert actions.shape == (7, 4) and actions.dtype == torch.float32
    # Parts in the Dict's (sorted) key order: arm (2 cols), grip, move.
    arm, grip, move = dist.dists
    ref = [
        torch.distributions.Normal(arm.mean, arm.std),
        torch.distributions.Categorical(logits=grip.log_p),
        torch.distributions.Categorical(logits=move.log_p),
    ]
    log_prob = (
        ref[0].log_prob(actions[:, :2]).sum(-1)
        + ref[1].log_prob(actions[:, 2].long())
        + ref[2].log_prob(actions[:, 3].long())
    )
    entropy = ref[0].entropy().sum(-1) + ref[1].entropy() + ref[2].entropy()
    torch.testing.assert_close(dist.log_probs(actions), log_prob[:, None])
    torch.testing.assert_close(dist.entropy(), entropy[:, None])


def _sequence_batch(policy, steps=5, envs=3, seed=3):
    """A flattened [T, N] minibatch with episode ends, as upstream's storage lays it out."""
    g = torch.Generator().manual_seed(seed)
    masks = torch.rand(steps, envs, 1, generator=g) > 0.3
    batch = dict(
        observations=random_obs(_obs_space(), steps * envs, seed),
        rnn_hidden_states=torch.randn(envs, policy.num_recurrent_layers, 16, generator=g),
        prev_actions=torch.randn(steps * envs, 9, generator=g),
        masks=masks.view(-1, 1),
        action=torch.randn(steps * envs, 9, generator=g),
    )
    seq_info = build_rnn_build_seq_info(
        torch.device("cpu"), build_pack_info_from_dones((~masks).view(steps, envs).numpy())
    )
    return batch, seq_info


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
def test_packed_and_time_major_batches_give_identical_outputs(rnn_type):
    policy = _small_policy(rnn_type=rnn_type)
    batch, seq_info = _sequence_batch(policy)
    args = [
        batch[k] for k in ("observations", "rnn_hidden_states", "prev_actions", "masks", "action")
    ]
    packed = policy.evaluate_actions(*args, seq_info)
    time_major = policy.evaluate_actions(*args, None)
    for a, b in zip(packed[:4], time_major[:4]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_checkpoint_loads_into_fresh_policy_with_identical_outputs(tmp_path):
    policy = _small_policy(seed=4)
    torch.save(policy.state_dict(), tmp_path / "ckpt.pth")
    fresh = _small_policy(seed=5)
    fresh.load_state_dict(torch.load(tmp_path / "ckpt.pth", weights_only=True))
    batch, seq_info = _sequence_batch(policy)
    args = [
        batch[k] for k in ("observations", "rnn_hidden_states", "prev_actions", "masks", "action")
    ]
    for a, b in zip(
        policy.evaluate_actions(*args, seq_info)[:4], fresh.evaluate_actions(*args, seq_info)[:4]
    ):
        assert torch.equal(a, b)
    obs = random_obs(_obs_space(), 3)
    h = torch.zeros(3, 4, 16)
    prev, masks = torch.zeros(3, 9), torch.ones(3, 1, dtype=torch.bool)
    assert torch.equal(
        policy.act(obs, h, prev, masks, deterministic=True).actions,
        fresh.act(obs, h, prev, masks, deterministic=True).actions,
    )


@pytest.mark.slow
def test_policy_overfits_tiny_supervised_batch():
    policy = _small_policy(action_space=spaces.Discrete(4), seed=6, hidden_size=64)
    n = 8
    obs = random_obs(_obs_space(), n, seed=6)
    targets = torch.arange(n)[:, None] % 4
    returns = torch.linspace(-1, 1, n)[:, None]
    h = torch.zeros(n, policy.num_recurrent_layers, 64)
    prev, masks = torch.zeros(n, 1, dtype=torch.long), torch.ones(n, 1, dtype=torch.bool)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)

    def loss_fn():
        value, log_probs, _, _, _ = policy.evaluate_actions(obs, h, prev, masks, targets, None)
        return -log_probs.mean() + (value - returns).pow(2).mean()

    first = float(loss_fn().detach())  # log(4) + value error, about 1.8
    for _ in range(80):
        opt.zero_grad()
        loss_fn().backward()
        opt.step()
    last = float(loss_fn().detach())
    assert last < first / 10, (first, last)


def test_discrete_policy_runs_through_upstream_storage_and_ppo():
    policy = _small_policy(action_space=spaces.Discrete(3), seed=7)
    steps, envs = 4, 2
    storage = RolloutStorage(
        steps, envs, _obs_space(), policy.policy_action_space, policy, is_double_buffered=False
    )
    storage.insert_first_observations(random_obs(_obs_space(), envs))
    for t in range(steps):
        cur = storage.buffers[t]
        with torch.no_grad():
            out = policy.act(
                cur["observations"],
                cur["recurrent_hidden_states"],
                cur["prev_actions"],
                cur["masks"],
            )
        storage.insert(
            next_observations=random_obs(_obs_space(), envs, t + 1),
            next_recurrent_hidden_states=out.rnn_hidden_states,
            actions=out.actions,
            action_log_probs=out.action_log_probs,
            value_preds=out.values,
            rewards=torch.rand(envs, 1),
            next_masks=torch.tensor([[True], [t != 1]]),
        )
        storage.advance_rollout()
    storage.compute_returns(torch.zeros(envs, 1), True, 0.99, 0.95)
    ppo = PPO(policy, 0.2, 1, 1, 0.5, 0.01, lr=1e-3, eps=1e-5, max_grad_norm=0.5)
    before = [p.detach().clone() for p in policy.parameters()]
    metrics = ppo.update(storage)
    assert np.isfinite(metrics["action_loss"]) and np.isfinite(metrics["value_loss"])
    assert any(not torch.equal(b, p) for b, p in zip(before, policy.parameters()))


def _config(**ddppo):
    return OmegaConf.create(
        {
            "habitat_baselines": {
                "rl": {
                    "ppo": {"hidden_size": 16},
                    "ddppo": {
                        "backbone": "resnet18",
                        "rnn_type": "LSTM",
                        "num_recurrent_layers": 1,
                        **ddppo,
                    },
                    "policy": {
                        "main_agent": {
                            "action_distribution_type": "gaussian",
                            "action_dist": {"use_std_param": True},
                        }
                    },
                },
                "ver_policy": {"base_planes": 8, "ngroups": 4, "dilations": [1, 1]},
            }
        }
    )


def test_from_config_reads_upstream_and_our_keys():
    policy = VERPolicy.from_config(
        _config(), _obs_space(), HAB_ACTIONS, agent_name="main_agent", orig_action_space=HAB_ACTIONS
    )
    assert policy.num_recurrent_layers == 2 and policy.recurrent_hidden_size == 16
    assert policy.net.visual_encoder.backbone.out_channels == 64
    assert all(h.std_param is not None for h in policy.action_distribution.heads)
    assert policy.action_distribution_type == "gaussian"


def test_config_errors_name_the_key():
    with pytest.raises(ValueError, match=r"rl\.ddppo\.backbone='resnet50'"):
        VERPolicy.from_config(
            _config(backbone="resnet50"), _obs_space(), HAB_ACTIONS, agent_name="main_agent"
        )
    with pytest.raises(ValueError, match="action_distribution_type='gaussian'"):
        VERPolicy.from_config(_config(), _obs_space(), spaces.Discrete(3), agent_name="main_agent")
