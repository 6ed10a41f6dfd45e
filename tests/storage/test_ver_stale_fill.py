"""VERStorage under back-to-back preemption (issue 16, item 1).

A persistently slow rank is preempted in consecutive rollouts. Its stale
fill must come from the previous rollout's fresh steps (not that rollout's
own stale copies, two rollouts old), no sequence piece may run across a
missing step, and a GRU replayed from the stored states must reproduce the
hidden states computed at collection time.
"""

import numpy as np
import torch
from gym import spaces

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_baselines.rl.models.rnn_state_encoder import build_rnn_state_encoder
from habitat_ver.storage import minibatch as mb
from habitat_ver.storage.ver_storage import VERStorage
from habitat_ver.updaters.gae_targets import GAETargets

# Each observation is (env, step id, 0): the batch names its steps.
OBS = spaces.Dict({"state": spaces.Box(-1e6, 1e6, (3,), dtype=np.float32)})
LAYERS, HIDDEN = 1, 4


class GRUCollector:
    """Drives a pair of VERStorages like the preempting VER trainer, with a GRU
    policy whose per-step outputs are recorded by (env, step)."""

    def __init__(self, T, N, seed):
        ac = type("AC", (), dict(num_recurrent_layers=LAYERS, recurrent_hidden_size=HIDDEN))
        self.storages = [VERStorage(T, N, OBS, spaces.Discrete(2), ac) for _ in range(2)]
        self.n, self.batch = N, T * N
        self.rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        self.enc = build_rnn_state_encoder(3, HIDDEN, "GRU", LAYERS).eval()
        self.state = torch.zeros(N, LAYERS, HIDDEN)
        self.step = np.zeros(N, np.int64)
        self.ended = np.ones(N, bool)
        self.outputs = {}  # (env, step) -> GRU output at collection

    def insert(self, storage, envs):
        n = len(envs)
        ids = torch.as_tensor(envs, dtype=torch.long)
        masks = torch.from_numpy(~self.ended[envs]).view(n, 1)
        obs = torch.from_numpy(np.stack([envs, self.step[envs], np.zeros(n)], 1).astype(np.float32))
        given = self.state[ids].clone()
        with torch.no_grad():
            out, nxt = self.enc(obs, given, masks)
        zeros = torch.zeros(n, 1, dtype=torch.long)
        storage.insert(
            ids,
            observations={"state": obs},
            recurrent_hidden_states=given,
            prev_actions=zeros,
            masks=masks,
            actions=zeros,
            action_log_probs=torch.zeros(n, 1),
            value_preds=torch.randn(n, 1),
            rewards=torch.randn(n, 1),
        )
        for i, e in enumerate(envs):
            self.outputs[(int(e), int(self.step[e]))] = out[i]
        self.state[ids] = nxt
        self.ended[envs] = self.rng.random(n) < 0.1
        self.step[envs] += 1

    def collect(self, storage, target, speeds):
        """Random subsets of envs (fast ones more often) until ``target`` steps."""
        while storage.steps_collected < target:
            room = target - storage.steps_collected
            pending = storage.has_pending(torch.arange(self.n)).numpy()
            envs = np.flatnonzero(self.rng.random(self.n) < speeds)
            self.rng.shuffle(envs)
            envs = envs[np.cumsum(pending[envs]) <= room]
            if envs.size:
                self.insert(storage, envs)


def _fresh_keys(storage):
    n = int(storage._counters["num_slots"])
    fresh = storage._slots["learnable"][:n] & ~storage.buffers["is_stale"][:n].view(-1)
    obs = storage.buffers["observations"]["state"][torch.nonzero(fresh).view(-1)].long()
    return {(int(o[0]), int(o[1])) for o in obs}


def _check_update(c, storage, previous_fresh, counts):
    """Counts gap pieces, stale rows not from the previous fresh steps, and
    the GRU replay error over one epoch of minibatches."""
    need, not_prev_fresh = storage.num_stale, 0
    storage.compute_returns(None, True, 0.9, 0.8)
    GAETargets(0.9, 0.8).fill_returns(storage)
    for batch in storage.data_generator(None, 2):
        obs = batch["observations"]["state"].long()
        keys = [(int(o[0]), int(o[1])) for o in obs]
        info = batch.get("rnn_build_seq_info")
        lengths = [1] * len(keys) if info is None else info["cpu_sequence_lengths"].tolist()
        per_step = [len(lengths)] if info is None else info["cpu_num_seqs_at_step"].tolist()
        offsets = np.cumsum(per_step) - per_step
        for k, length in enumerate(lengths):
            piece = [keys[int(offsets[t]) + k] for t in range(length)]
            counts["pieces"] += 1
            counts["gap_pieces"] += any(b != (a[0], a[1] + 1) for a, b in zip(piece, piece[1:]))
        stale = [k for k, s in zip(keys, batch["is_stale"].view(-1).tolist()) if s]
        counts["stale_rows"] += len(stale)
        not_prev_fresh += sum(k not in previous_fresh for k in stale)
        with torch.no_grad():
            out, _ = c.enc(
                batch["observations"]["state"],
                batch["recurrent_hidden_states"],
                batch["masks"],
                info,
            )
        expected = torch.stack([c.outputs[k] for k in keys])
        counts["max_replay_error"] = max(
            counts["max_replay_error"], float((out - expected).abs().max())
        )
    # Unavoidable only where the previous rollout had too few fresh steps.
    short = max(0, need - len(previous_fresh))
    counts["stale_short"] += short
    counts["stale_not_prev_fresh"] += not_prev_fresh - short


def test_back_to_back_preemption_fuzz():
    counts = dict(
        pieces=0,
        gap_pieces=0,
        stale_rows=0,
        stale_not_prev_fresh=0,
        stale_short=0,
        preempted=0,
        max_replay_error=0.0,
    )
    for seed in range(12):
        T, N = 4, 4
        c = GRUCollector(T, N, seed)
        speeds = c.rng.uniform(0.2, 1.0, N)
        current, spare = c.storages
        c.insert(current, np.arange(N))
        previous_fresh = set()
        for update in range(8):
            # Never the first rollout (nothing to fill from); mostly preempted.
            cut = update > 0 and c.rng.random() < 0.8
            target = int(c.rng.integers(2, c.batch)) if cut else c.batch
            c.collect(current, target, speeds)
            if cut:
                current.fill_stale(spare)
                counts["preempted"] += 1
            fresh = _fresh_keys(current)
            _check_update(c, current, previous_fresh, counts)
            previous_fresh = fresh
            spare.continue_from(current)
            current, spare = spare, current
    assert counts["preempted"] > 50 and counts["stale_rows"] > 300
    assert counts["gap_pieces"] == 0, counts
    assert counts["stale_not_prev_fresh"] == 0, counts
    assert counts["max_replay_error"] < 1e-5, counts


def test_cut_sequences_cuts_at_a_step_gap():
    # Env 0 has steps 2, 3 and 5 (4 missing), env 1 has steps 7, 8.
    seqs = mb.cut_sequences(
        torch.tensor([0, 1, 0, 0, 1]),
        torch.tensor([2, 7, 3, 5, 8]),
        torch.zeros(5, dtype=torch.bool),
    )
    assert seqs.steps.tolist() == [0, 2, 3, 1, 4]
    assert seqs.starts.tolist() == [0, 2, 3]  # [2, 3], [5], [7, 8]
    assert seqs.lengths.tolist() == [2, 1, 2]
