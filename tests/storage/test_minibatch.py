"""Pure minibatch construction: cutting, ordering, splitting, packing."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_baselines.rl.models.rnn_state_encoder import (
    build_rnn_build_seq_info,
    build_rnn_state_encoder,
)
from habitat_ver.storage.minibatch import (
    cut_sequences,
    pack_sequences,
    packed_rnn_build_seq_info,
    sequence_order_by_env,
    split_into_minibatches,
)


def test_cut_sequences_hand_case():
    # Steps given out of order. Env 0: steps 0,1,2 with an episode start at 1;
    # env 1: steps 0,1,2 with no episode start (its step 0 is a rollout start).
    env = torch.tensor([1, 0, 1, 0, 0, 1])
    step = torch.tensor([0, 0, 1, 1, 2, 2])
    starts = torch.tensor([False, True, False, True, False, False])
    seqs = cut_sequences(env, step, starts)
    # Sorted by (env, step): inputs 1,3,4 (env 0) then 0,2,5 (env 1);
    # cuts before input 3 (episode start) and before input 0 (new env).
    assert seqs.steps.tolist() == [1, 3, 4, 0, 2, 5]
    assert seqs.starts.tolist() == [0, 1, 3]
    assert seqs.lengths.tolist() == [1, 2, 3]


def test_cut_sequences_rejects_duplicates():
    with pytest.raises(ValueError, match="twice"):
        cut_sequences(torch.tensor([0, 0]), torch.tensor([3, 3]), torch.tensor([False, False]))


def test_split_hand_case():
    # Sequences (offset, length): s0=(0,3), s1=(3,2), s2=(5,3); order s2,s0,s1:
    # line = 5 6 7 | 0 1 2 | 3 4 -> halves [5 6 7 0] and [1 2 3 4].
    pieces = split_into_minibatches(
        torch.tensor([0, 3, 5]), torch.tensor([3, 2, 3]), torch.tensor([2, 0, 1]), 2
    )
    assert [p.starts.tolist() for p in pieces] == [[5, 0], [1, 3]]
    assert [p.lengths.tolist() for p in pieces] == [[3, 1], [2, 2]]


def test_split_rejects_uneven_minibatches():
    with pytest.raises(ValueError, match="divide"):
        split_into_minibatches(torch.tensor([0]), torch.tensor([5]), torch.tensor([0]), 2)


def test_pack_hand_case():
    # Pieces (offset, length): (10,1), (0,3), (5,2). Columns longest first:
    # piece 1, piece 2, piece 0. Rows: t=0: 0 5 10; t=1: 1 6; t=2: 2.
    layout = pack_sequences(torch.tensor([10, 0, 5]), torch.tensor([1, 3, 2]))
    assert layout.indices.tolist() == [0, 5, 10, 1, 6, 2]
    assert layout.num_seqs_at_step.tolist() == [3, 2, 1]
    assert layout.lengths.tolist() == [3, 2, 1]


def test_order_by_env_keeps_time_order_within_env():
    # Sequences' envs (in time order per env): 0 0 1 2 2; env order 2, 0, 1.
    order = sequence_order_by_env(torch.tensor([0, 0, 1, 2, 2]), torch.tensor([2, 0, 1]))
    assert order.tolist() == [3, 4, 0, 1, 2]


@st.composite
def sequence_sets(draw):
    lengths = draw(st.lists(st.integers(1, 7), min_size=1, max_size=9))
    total = sum(lengths)
    b = draw(st.sampled_from([d for d in range(1, total + 1) if total % d == 0]))
    perm = draw(st.permutations(range(len(lengths))))
    return torch.tensor(lengths), torch.tensor(perm), b


@settings(max_examples=60, deadline=None)
@given(sequence_sets())
def test_split_and_pack_properties(case):
    lengths, order, b = case
    starts = torch.cumsum(lengths, 0) - lengths
    total = int(lengths.sum())
    seq_of = torch.repeat_interleave(torch.arange(len(lengths)), lengths)
    seen = []
    for pieces in split_into_minibatches(starts, lengths, order, b):
        assert int(pieces.lengths.sum()) == total // b
        for s, n in zip(pieces.starts.tolist(), pieces.lengths.tolist()):
            # A piece never spans two sequences.
            assert len(set(seq_of[s : s + n].tolist())) == 1
        layout = pack_sequences(pieces.starts, pieces.lengths)
        expected = sorted(
            i
            for s, n in zip(pieces.starts.tolist(), pieces.lengths.tolist())
            for i in range(s, s + n)
        )
        assert sorted(layout.indices.tolist()) == expected
        assert int(layout.num_seqs_at_step.sum()) == len(expected)
        assert layout.num_seqs_at_step[0] == pieces.lengths.numel()
        seen += expected
    assert sorted(seen) == list(range(total))


@pytest.mark.parametrize("rnn_type", ["GRU", "LSTM"])
def test_packed_info_drives_habitat_rnn_like_a_per_piece_loop(rnn_type):
    torch.manual_seed(0)
    enc = build_rnn_state_encoder(4, 5, rnn_type, 2).eval()
    layers = enc.num_recurrent_layers
    starts, lengths = torch.tensor([0, 4, 5, 8]), torch.tensor([4, 1, 3, 2])
    x = torch.randn(10, 4)
    masks = torch.ones(10, 1, dtype=torch.bool)
    masks[5] = False  # piece 2 starts an episode: its state must be zeroed
    h0 = torch.randn(4, layers, 5)
    layout = pack_sequences(starts, lengths)
    k = lengths.numel()
    column = layout.indices[:k]  # first step of each packed column
    piece_of_column = [starts.tolist().index(int(i)) for i in column]
    info = build_rnn_build_seq_info(torch.device("cpu"), packed_rnn_build_seq_info(layout))
    with torch.no_grad():
        out, _ = enc(x[layout.indices], h0[piece_of_column], masks[layout.indices], info)
        expected = torch.empty(10, 5)
        for p in range(k):
            h = h0[p : p + 1]
            for i in range(int(starts[p]), int(starts[p] + lengths[p])):
                y, h = enc(x[i : i + 1], h, masks[i : i + 1])
                expected[i] = y[0]
    torch.testing.assert_close(out, expected[layout.indices])
