"""VERStorage: minibatch invariants, per-sequence GAE, sequence start states (upstream's
cut-tail bug), importance weights, equivalence with LockstepRolloutStorage under PPO."""

import copy
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from gym import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_baselines.rl.models.rnn_state_encoder import (
    build_pack_info_from_episode_ids,
    build_rnn_state_encoder,
)
from habitat_ver.algo.gae import compute_gae
from habitat_ver.policies.compact_policy import CompactPolicy
from habitat_ver.storage.return_steps import RolloutSteps
from habitat_ver.storage.rollout_storage import LockstepRolloutStorage
from habitat_ver.storage.ver_storage import VERStorage
from habitat_ver.updaters.ppo import PPOUpdater
from habitat_ver.updaters.gae_targets import GAETargets

# Each stored observation is (env, step id, episode id): batches name their steps.
OBS = spaces.Dict({"state": spaces.Box(-1e6, 1e6, (3,), dtype=np.float32)})
LAYERS, HIDDEN = 2, 3
GAMMA, LAMBDA = 0.9, 0.8


def _storage(T, N, **kw):
    ac = SimpleNamespace(num_recurrent_layers=LAYERS, recurrent_hidden_size=HIDDEN)
    return VERStorage(T, N, OBS, spaces.Discrete(3), ac, **kw)


class Collector:
    """Drives a VERStorage like the VER system and records the truth."""

    def __init__(self, storage, seed, done_prob, hidden_fn=None):
        self.s, self.n = storage, storage.num_envs
        self.rng = np.random.default_rng(seed)
        self.done_prob = done_prob
        self.step = np.zeros(self.n, np.int64)
        self.episode = np.zeros(self.n, np.int64)
        self.ended = np.ones(self.n, bool)  # the first observation starts an episode
        self.rec = {}  # (env, step) -> dict(h, v, mask, episode, r, done)
        self.learnable = []  # (env, step) completed in the current rollout
        self.hidden_fn = hidden_fn

    def insert(self, envs):
        envs = np.asarray(envs)
        n = len(envs)
        masks = torch.from_numpy(~self.ended[envs]).view(n, 1)
        obs = torch.from_numpy(
            np.stack([envs, self.step[envs], self.episode[envs]], 1).astype(np.float32)
        )
        h = self.hidden_fn(envs, obs, masks) if self.hidden_fn else torch.randn(n, LAYERS, HIDDEN)
        v, r = torch.randn(n, 1), torch.randn(n, 1)
        pending = self.s.has_pending(torch.from_numpy(envs))
        zeros = torch.zeros(n, 1, dtype=torch.long)
        self.s.insert(
            torch.from_numpy(envs),
            observations={"state": obs},
            recurrent_hidden_states=h,
            prev_actions=zeros,
            masks=masks,
            actions=zeros,
            action_log_probs=torch.randn(n, 1),
            value_preds=v,
            rewards=r,
        )
        for i, e in enumerate(envs):
            if pending[i]:
                prev = self.rec[(e, self.step[e] - 1)]
                prev.update(r=float(r[i]), done=bool(self.ended[e]))
                self.learnable.append((e, self.step[e] - 1))
            self.rec[(e, self.step[e])] = dict(
                h=h[i].clone(), v=float(v[i]), episode=int(self.episode[e])
            )
            self.ended[e] = self.rng.random() < self.done_prob
            self.episode[e] += int(self.ended[e])
            self.step[e] += 1

    def rollout(self, speeds):
        """Random env subsets, fast envs chosen more often, until done."""
        s = self.s
        while not s.rollout_done:
            pending = s.has_pending(torch.arange(self.n)).numpy()
            if s.variable_experience:
                allowed = np.ones(self.n, bool)
            else:
                allowed = ~pending | (s.env_steps.numpy() < s.num_steps)
            pick = allowed & (self.rng.random(self.n) < speeds)
            envs = np.flatnonzero(pick)
            self.rng.shuffle(envs)
            room = s.num_steps * self.n - s.steps_collected
            keep, used = [], 0
            for e in envs:
                if used + int(pending[e]) <= room:
                    keep.append(e)
                    used += int(pending[e])
            if keep:
                self.insert(keep)

    def after_update(self, next_storage=None):
        """Next rollout in place, or in ``next_storage`` (which is returned
        to the caller's rotation: the learnt storage becomes the spare)."""
        if next_storage is None:
            self.s.after_update()
        else:
            next_storage.continue_from(self.s)
            self.s, next_storage = next_storage, self.s
        self.learnable = []
        return next_storage


def unpack(batch):
    """Pieces of a packed batch, each a list of row indices in time order."""
    rows = batch["masks"].shape[0]
    info = batch.get("rnn_build_seq_info")
    if info is None:
        return [[i] for i in range(rows)]
    per_step = info["cpu_num_seqs_at_step"].numpy()
    offsets = np.cumsum(per_step) - per_step
    lengths = info["cpu_sequence_lengths"].numpy()
    return [[int(offsets[t]) + k for t in range(lengths[k])] for k in range(per_step[0])]


def key(batch, row):
    env, step, _ = batch["observations"]["state"][row].long().tolist()
    return env, step


def reference_returns(c):
    """Plain per-env loop: GAE over each env's learnable steps this rollout."""
    out = {}
    for e in range(c.n):
        steps = sorted(s for (env, s) in c.learnable if env == e)
        if not steps:
            continue
        next_v, next_a = c.rec[(e, steps[-1] + 1)]["v"], 0.0
        for s in reversed(steps):
            r = c.rec[(e, s)]
            if r["done"]:
                next_v, next_a = 0.0, 0.0
            delta = r["r"] + GAMMA * next_v - r["v"]
            next_a = delta + GAMMA * LAMBDA * next_a
            out[(e, s)] = next_a + r["v"]
            next_v = r["v"]
    return out


def check_epoch(c, batches, num_mini_batch, cap=1.0):
    size = c.s.num_steps * c.n // num_mini_batch
    seen, ref = [], reference_returns(c)
    counts = np.bincount([e for e, _ in c.learnable], minlength=c.n)
    for batch in batches:
        assert batch["masks"].shape[0] == size
        pieces = unpack(batch)
        assert batch["recurrent_hidden_states"].shape[0] == len(pieces)
        for k, rows in enumerate(pieces):
            keys = [key(batch, i) for i in rows]
            # One env, consecutive steps, one episode: no episode start inside.
            assert len({e for e, _ in keys}) == 1
            assert [s for _, s in keys] == list(range(keys[0][1], keys[0][1] + len(keys)))
            assert len({c.rec[kk]["episode"] for kk in keys}) == 1
            assert all(bool(batch["masks"][i]) for i in rows[1:])
            # Start state: the one recorded at collection time, cut tails too.
            assert torch.equal(batch["recurrent_hidden_states"][k], c.rec[keys[0]]["h"])
        for i in range(size):
            kk = key(batch, i)
            seen.append(kk)
            assert float(batch["returns"][i]) == pytest.approx(ref[kk], abs=1e-4)
            if "is_coeffs" in batch:
                w = float(batch["is_coeffs"][i])
                assert w <= cap + 1e-6
                expected = min(cap, len(c.learnable) / (c.n * counts[kk[0]]))
                assert w == pytest.approx(expected, rel=1e-6)
    assert len(seen) == len(set(seen)) == len(c.learnable)
    assert set(seen) == set(c.learnable)


@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 4))
    t = draw(st.integers(1, 5))
    divisors = [b for b in range(1, t * n + 1) if (t * n) % b == 0]
    return dict(
        n=n,
        t=t,
        b=draw(st.sampled_from(divisors)),
        done_prob=draw(st.sampled_from([0.0, 0.2, 0.5])),
        speeds=draw(st.lists(st.floats(0.1, 1.0), min_size=n, max_size=n)),
        seed=draw(st.integers(0, 2**16)),
        variable=draw(st.booleans()),
        mode=draw(st.sampled_from(["ver", "lockstep"])),
        # Alternate two storages (overlap_rollouts_and_learn) instead of one.
        two_storages=draw(st.booleans()),
    )


@settings(max_examples=40, deadline=None)
@given(scenarios())
def test_minibatch_invariants_over_random_schedules(sc):
    s = _storage(sc["t"], sc["n"], variable_experience=sc["variable"], minibatch_mode=sc["mode"])
    spare = (
        _storage(sc["t"], sc["n"], variable_experience=sc["variable"], minibatch_mode=sc["mode"])
        if sc["two_storages"]
        else None
    )
    c = Collector(s, sc["seed"], sc["done_prob"])
    torch.manual_seed(sc["seed"])
    c.insert(np.arange(sc["n"]))  # first observations: nothing completes
    for _ in range(3):  # later rollouts start from carried pending steps
        c.rollout(np.asarray(sc["speeds"]))
        assert c.s.steps_collected == sc["t"] * sc["n"] == len(c.learnable)
        c.s.compute_returns(None, True, GAMMA, LAMBDA)
        GAETargets(GAMMA, LAMBDA).fill_returns(c.s)
        for _epoch in range(2):
            check_epoch(c, list(c.s.data_generator(None, sc["b"])), sc["b"])
        spare = c.after_update(spare)


def test_equal_counts_give_unit_weights_and_skewed_counts_are_truncated():
    c = Collector(s := _storage(3, 2, is_coeff_cap=1.0), 0, 0.3)
    for _ in range(4):  # lock-step: every env 3 learnable steps
        c.insert([0, 1])
    s.compute_returns(None, True, GAMMA, LAMBDA)
    GAETargets(GAMMA, LAMBDA).fill_returns(s)
    assert torch.equal(
        s.buffers["is_coeffs"][torch.isfinite(s.buffers["is_coeffs"])], torch.ones(6)
    )
    c2 = Collector(s2 := _storage(3, 2, is_coeff_cap=2.0), 0, 0.3)
    c2.insert([0, 1])
    for _ in range(4):
        c2.insert([0])  # env 0: 4 steps; env 1: pending only
    c2.insert([1])
    c2.insert([0])  # env 0: 5, env 1: 1 -> S = 6
    s2.compute_returns(None, True, GAMMA, LAMBDA)
    GAETargets(GAMMA, LAMBDA).fill_returns(s2)
    batch = next(s2.data_generator(None, 1))
    w = {key(batch, i)[0]: float(batch["is_coeffs"][i]) for i in range(6)}
    # S / (N n_e): env 0: 6 / (2 * 5) = 0.6;  env 1: 6 / 2 = 3 -> capped at 2.
    assert w == pytest.approx({0: 0.6, 1: 2.0})


def _sequence_gae(r, v, d, boot, lengths, gamma, gae_lambda):
    """(advantages, returns) of back-to-back sequences, by the run's estimator."""
    steps = RolloutSteps(r, v, d, boot, lengths=lengths)
    ret = GAETargets(gamma, gae_lambda).sequence_returns(steps)
    return ret - v, ret


def test_sequence_gae_equals_loop_reference():
    # Three sequences of lengths 2, 1, 3; the second ends its episode.
    g = torch.Generator().manual_seed(0)
    r, v = torch.randn(6, 1, generator=g), torch.randn(6, 1, generator=g)
    d = torch.tensor([[False], [False], [True], [False], [True], [False]])
    boot = torch.randn(3, 1, generator=g)
    adv, ret = _sequence_gae(r, v, d, boot, torch.tensor([2, 1, 3]), 0.9, 0.7)
    expected = []
    for start, length, k in ((0, 2, 0), (2, 1, 1), (3, 3, 2)):
        a, nv, part = 0.0, boot[k, 0], []
        for i in reversed(range(start, start + length)):
            nd = 0.0 if d[i, 0] else 1.0
            a = r[i, 0] + 0.9 * nv * nd - v[i, 0] + 0.9 * 0.7 * nd * a
            nv = v[i, 0]
            part.append(a)
        expected += reversed(part)
    torch.testing.assert_close(adv[:, 0], torch.stack(expected))
    torch.testing.assert_close(ret, adv + v)
    # Same bits as compute_gae on one column when there is a single sequence.
    _, r1 = compute_gae(r.view(6, 1, 1), v.view(6, 1, 1), d.view(6, 1, 1), boot[2:], 0.9, 0.7)
    _, r2 = _sequence_gae(r, v, d, boot[2:], torch.tensor([6]), 0.9, 0.7)
    assert torch.equal(r1.view(6, 1), r2)


# --------------------------------------------------- upstream's cut-tail bug
def _gru_collector(storage, seed):
    torch.manual_seed(seed)
    enc = build_rnn_state_encoder(3, HIDDEN, "GRU", LAYERS).eval()
    state = torch.zeros(storage.num_envs, LAYERS, HIDDEN)
    outputs = {}

    def hidden_fn(envs, obs, masks):
        given = state[envs].clone()
        with torch.no_grad():
            out, nxt = enc(obs, given, masks)
        for i, e in enumerate(envs):
            outputs[(int(e), int(obs[i, 1]))] = out[i]
        state[envs] = nxt
        return given

    return enc, Collector(storage, seed, 0.0, hidden_fn), outputs


def test_cut_tail_after_earlier_episode_of_same_env_gets_its_own_state():
    """Env 0: episode A = steps 0-1, episode B = steps 2-7 (8 learnable steps);
    env 1: 8 steps. We look for a minibatch holding episode A of env 0 and a
    cut tail of episode B: upstream hands that tail episode A's first state."""
    found = False
    for seed in range(50):
        s = _storage(8, 2)
        enc, c, outputs = _gru_collector(s, seed)
        for t in range(9):
            c.ended[0] = t == 2  # env 0's step 1 ended episode A
            c.episode[0] = 1 if t >= 2 else 0
            c.insert([0, 1])
        s.compute_returns(None, True, GAMMA, LAMBDA)
        GAETargets(GAMMA, LAMBDA).fill_returns(s)
        torch.manual_seed(seed)
        for batch in s.data_generator(None, 4):
            pieces = unpack(batch)
            starts = [key(batch, p[0]) for p in pieces]
            tail = [k for k, (e, t) in enumerate(starts) if e == 0 and t > 2]  # mid-B
            if not (tail and (0, 0) in starts):
                continue
            found = True
            # Upstream's packing: one state per env, its first sequence's.
            rows = range(batch["masks"].shape[0])
            ids = [key(batch, i) for i in rows]
            up = build_pack_info_from_episode_ids(
                np.array([c.rec[i]["episode"] for i in ids]),
                np.array([e for e, _ in ids]),
                np.array([s_ for _, s_ in ids]),
            )
            env0 = list(np.unique([e for e, _ in ids])).index(0)
            assert ids[up["first_step_for_env"][env0]] == (0, 0)  # episode A's
            k = tail[0]
            assert not torch.equal(c.rec[(0, 0)]["h"], c.rec[starts[k]]["h"])
            assert torch.equal(batch["recurrent_hidden_states"][k], c.rec[starts[k]]["h"])
            # End to end: the packed GRU reproduces every collection output.
            with torch.no_grad():
                out, _ = enc(
                    batch["observations"]["state"],
                    batch["recurrent_hidden_states"],
                    batch["masks"],
                    batch["rnn_build_seq_info"],
                )
            for i in rows:
                torch.testing.assert_close(out[i], outputs[ids[i]])
        if found:
            break
    assert found, "scenario never occurred; widen the seed range"


# ------------------------------------------- equivalence with lock-step PPO
T_EQ, N_EQ = 4, 4


def _experience(dones_at):
    """T+1 lock-step inferences of a GRU CompactPolicy on 4 envs."""
    torch.manual_seed(0)
    policy = CompactPolicy(OBS, spaces.Discrete(3), hidden_size=8, rnn_type="gru")
    g = torch.Generator().manual_seed(1)
    h = torch.zeros(N_EQ, policy.net.num_recurrent_layers, 8)
    prev, masks = torch.zeros(N_EQ, 1, dtype=torch.long), torch.zeros(N_EQ, 1, dtype=torch.bool)
    steps = []  # rewards r_t arrive with o_{t+1}
    for t in range(T_EQ + 1):
        obs = {"state": torch.randn(N_EQ, 3, generator=g)}
        with torch.no_grad():
            out = policy.act(obs, h, prev, masks)
        steps.append(
            dict(obs=obs, h=h, prev=prev, masks=masks, out=out, r=torch.randn(N_EQ, 1, generator=g))
        )
        h, prev = out.rnn_hidden_states, out.actions
        masks = torch.tensor([[(t, e) not in dones_at] for e in range(N_EQ)])
    return policy, steps


def _fill_lockstep(policy, steps):
    s = LockstepRolloutStorage(T_EQ, N_EQ, OBS, policy.policy_action_space, policy)
    s.insert_first_observations(steps[0]["obs"])
    s.buffers["recurrent_hidden_states"][0] = steps[0]["h"]
    for t in range(T_EQ):
        o, nxt = steps[t]["out"], steps[t + 1]
        s.insert(
            next_observations=nxt["obs"],
            next_recurrent_hidden_states=nxt["h"],
            actions=o.actions,
            action_log_probs=o.action_log_probs,
            value_preds=o.values,
            rewards=steps[t]["r"],
            next_masks=nxt["masks"],
        )
        s.advance_rollout()
    s.compute_returns(steps[T_EQ]["out"].values, True, GAMMA, LAMBDA)
    GAETargets(GAMMA, LAMBDA).fill_returns(s)
    return s


def _fill_ver(policy, steps, variable):
    s = VERStorage(
        T_EQ,
        N_EQ,
        OBS,
        policy.policy_action_space,
        policy,
        variable_experience=variable,
        minibatch_mode="lockstep",
    )
    for t, st_ in enumerate(steps):
        o = st_["out"]
        s.insert(
            torch.arange(N_EQ),
            observations=st_["obs"],
            recurrent_hidden_states=st_["h"],
            prev_actions=st_["prev"],
            masks=st_["masks"],
            actions=o.actions,
            action_log_probs=o.action_log_probs,
            value_preds=o.values,
            rewards=steps[t - 1]["r"] if t else None,
        )
    s.compute_returns(None, True, GAMMA, LAMBDA)
    GAETargets(GAMMA, LAMBDA).fill_returns(s)
    return s


def _update(policy, storage):
    policy = copy.deepcopy(policy)
    before = [p.detach().clone() for p in policy.parameters()]
    upd = PPOUpdater(
        policy,
        clip_param=0.2,
        ppo_epoch=2,
        num_mini_batch=2,
        value_loss_coef=0.5,
        entropy_coef=0.01,
        lr=1e-2,
        eps=1e-5,
        max_grad_norm=0.5,
        use_normalized_advantage=False,
    )
    upd.use_targets(GAETargets(GAMMA, LAMBDA))
    torch.manual_seed(123)  # same env permutations for both storages
    metrics = upd.update(storage)
    return metrics, [p.detach() - b for p, b in zip(policy.parameters(), before)]


@pytest.mark.parametrize("variable", [False, True])
@pytest.mark.parametrize("dones_at", [(), ((1, 0), (2, 3), (0, 1))])
def test_one_ppo_update_matches_lockstep_storage(variable, dones_at):
    policy, steps = _experience(set(dones_at))
    lock, ver = _fill_lockstep(policy, steps), _fill_ver(policy, steps, variable)
    # Same returns, bit for bit, step by step.
    ver_ret = ver.buffers["returns"][: T_EQ * N_EQ].view(T_EQ, N_EQ, 1)
    assert torch.equal(ver_ret, lock.buffers["returns"][:T_EQ])
    (m_lock, d_lock), (m_ver, d_ver) = _update(policy, lock), _update(policy, ver)
    # Without episode ends: same rows in the same order, identical arithmetic; with
    # them, episodes are packed in another column order and rounding differs.
    tol = dict(rtol=0, atol=0) if not dones_at else dict(rtol=1e-4, atol=1e-6)
    for k in ("loss/value", "loss/policy", "loss/entropy", "grad_norm", "loss/total"):
        torch.testing.assert_close(m_ver[f"learner/{k}"], m_lock[f"learner/{k}"], **tol)
    for a, b in zip(d_ver, d_lock):
        torch.testing.assert_close(a, b, **tol)


def test_error_paths():
    with pytest.raises(ValueError, match="is_double_buffered"):
        _storage(2, 2, is_double_buffered=True)
    with pytest.raises(ValueError, match="minibatch_mode"):
        _storage(2, 2, minibatch_mode="bogus")
    c = Collector(s := _storage(1, 2), 0, 0.0)
    with pytest.raises(RuntimeError, match="compute_returns"):
        next(s.data_generator(None, 1))
    c.insert([0, 1])
    with pytest.raises(ValueError, match="unique"):
        c.insert([0, 0])
    c.insert([0, 1])
    with pytest.raises(ValueError, match="room"):
        c.insert([0])
    s.compute_returns(None, True, GAMMA, LAMBDA)
    GAETargets(GAMMA, LAMBDA).fill_returns(s)
    with pytest.raises(ValueError, match="divide"):
        next(s.data_generator(None, 3))
    s.insert_first_observations({})  # habitat's trainer calls it; a no-op here
    with pytest.raises(NotImplementedError, match="insert"):
        s.advance_rollout()


def test_compute_returns_runs_the_targets_step_it_was_handed_and_the_next_storage_keeps_it():
    # For an updater without a targets step (upstream's PPO) the trainer hands
    # the storage the run's step: compute_returns fills what fill_returns does.
    handed, by_hand = _storage(3, 2), _storage(3, 2)
    handed.returns_for_readers = GAETargets(GAMMA, LAMBDA)
    for s in (handed, by_hand):
        torch.manual_seed(0)  # the Collector draws values and rewards from torch's RNG
        c = Collector(s, 0, 0.3)
        c.insert([0, 1])
        c.rollout(np.array([1.0, 0.5]))
        s.compute_returns(None, True, GAMMA, LAMBDA)
    assert torch.isnan(by_hand.buffers["returns"]).all()  # compute_returns stores no returns
    GAETargets(GAMMA, LAMBDA).fill_returns(by_hand)
    torch.testing.assert_close(
        handed.buffers["returns"], by_hand.buffers["returns"], rtol=0, atol=0, equal_nan=True
    )
    assert torch.isfinite(handed.buffers["returns"]).sum() == 6  # T * N learnable steps
    nxt = _storage(3, 2)
    nxt.continue_from(handed)
    assert nxt.returns_for_readers == GAETargets(GAMMA, LAMBDA)


def _returns_by_step(storage):
    """(env, step id) -> stored return, for every learnable step."""
    n = int(storage._counters["num_slots"])
    slots = torch.nonzero(storage._slots["learnable"][:n]).view(-1)
    obs = storage.buffers["observations"]["state"][slots].long()
    return {
        (int(o[0]), int(o[1])): float(storage.buffers["returns"][s]) for o, s in zip(obs, slots)
    }


def test_preempted_rollout_is_filled_with_the_latest_previous_steps():
    T, N, B = 3, 2, 6
    previous, current = _storage(T, N), _storage(T, N)
    c = Collector(previous, 0, 0.3)
    c.insert([0, 1])
    c.rollout(np.array([1.0, 0.5]))
    previous.compute_returns(None, True, GAMMA, LAMBDA)
    GAETargets(GAMMA, LAMBDA).fill_returns(previous)
    old_returns = _returns_by_step(previous)
    n = int(previous._counters["num_slots"])
    write_order = torch.nonzero(previous._slots["learnable"][:n]).view(-1)
    obs = previous.buffers["observations"]["state"][write_order[-4:]].long()
    latest_four = {(int(o[0]), int(o[1])) for o in obs}
    c.after_update(current)
    c.insert([0, 1])  # both carried steps complete: 2 fresh steps
    assert current.steps_collected == 2 and not current.rollout_done
    assert current.fill_stale(previous) == B - 2 == current.num_stale
    current.compute_returns(None, True, GAMMA, LAMBDA)
    GAETargets(GAMMA, LAMBDA).fill_returns(current)
    batches = list(current.data_generator(None, 2))
    assert [b["masks"].shape[0] for b in batches] == [3, 3]
    rows = [(key(b, r), b, r) for b in batches for r in range(3)]
    assert len({k for k, _, _ in rows}) == B  # every step exactly once
    stale = {k for k, b, r in rows if bool(b["is_stale"][r])}
    assert stale == latest_four  # the previous rollout's most recent steps
    for k, b, r in rows:
        if k in stale:  # stale steps keep the returns computed back then
            assert float(b["returns"][r]) == pytest.approx(old_returns[k])
            assert float(b["is_coeffs"][r]) == 1.0
    # Not enough previous experience: one clear error.
    with pytest.raises(ValueError, match="previous_steps"):
        _storage(T, N).fill_stale(_storage(T, N))
