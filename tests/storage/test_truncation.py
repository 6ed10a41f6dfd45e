"""Time-limit cuts reach GAE through both storages (issue 16, item 4).

The observation after a cut is already the next episode's first, so a cut
step bootstraps from its own value V(s_t) (Sample Factory's approximation).
"""

from types import SimpleNamespace

import numpy as np
import torch
from gym import spaces

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_ver.storage.rollout_storage import LockstepRolloutStorage
from habitat_ver.storage.ver_storage import VERStorage
from habitat_ver.system.truncation import TRUNCATION_KEY, truncated_from_info_rows
from habitat_ver.updaters.gae_targets import GAETargets

OBS = spaces.Dict({"state": spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)})
AC = SimpleNamespace(num_recurrent_layers=1, recurrent_hidden_size=2)


def _ver_returns(cut):
    # T=2, N=1. Step 0 (value 0.5, reward 1) ends its episode; step 1 (value
    # 1, reward 2) is followed by the pending step of value 4. gamma = tau = 0.5.
    s = VERStorage(2, 1, OBS, spaces.Discrete(2), AC)
    zeros = torch.zeros(1, 1, dtype=torch.long)
    for value, mask, reward in ((0.5, False, None), (1.0, False, 1.0), (4.0, True, 2.0)):
        s.insert(
            torch.tensor([0]),
            observations={"state": torch.zeros(1, 1)},
            recurrent_hidden_states=torch.zeros(1, 1, 2),
            prev_actions=zeros,
            masks=torch.tensor([[mask]]),
            actions=zeros,
            action_log_probs=torch.zeros(1, 1),
            value_preds=torch.tensor([[value]]),
            rewards=None if reward is None else torch.tensor([[reward]]),
            truncated=torch.tensor([cut and reward == 1.0]),
        )
    s.compute_returns(None, True, 0.5, 0.5)
    GAETargets(0.5, 0.5).fill_returns(s)
    return s.buffers["returns"][:2, 0].tolist()


def test_ver_storage_bootstraps_a_cut_from_its_own_value():
    # Step 1: delta = 2 + 0.5*4 - 1 = 3, return 4 either way.
    # Step 0 as a terminal end: return 1. As a cut: r' = 1 + 0.5*V(s_0) = 1.25,
    # return 1.25 (the next episode's value 1 is never used).
    assert _ver_returns(cut=False) == [1.0, 4.0]
    assert _ver_returns(cut=True) == [1.25, 4.0]


def test_lockstep_storage_bootstraps_a_cut_from_its_own_value():
    # N=2, T=2: both envs' step 0 ends an episode (values 0.5, rewards 1),
    # env 0's by a time limit. Step 1: values 1, rewards 2, next_value 4.
    # gamma = tau = 0.5: returns at step 1 are 2 + 0.5*4 = 4; at step 0,
    # env 0: 1 + 0.5*0.5 = 1.25, env 1: 1 (terminal). Same without GAE.
    for use_gae in (True, False):
        s = LockstepRolloutStorage(2, 2, OBS, spaces.Discrete(2), AC)
        s.insert(
            value_preds=torch.full((2, 1), 0.5),
            rewards=torch.ones(2, 1),
            next_masks=torch.zeros(2, 1, dtype=torch.bool),
        )
        s.advance_rollout()
        s.mark_truncated(torch.tensor([True, False]))
        s.insert(
            value_preds=torch.ones(2, 1),
            rewards=torch.full((2, 1), 2.0),
            next_masks=torch.ones(2, 1, dtype=torch.bool),
        )
        s.advance_rollout()
        s.mark_truncated(torch.tensor([True, True]))  # not an episode end: ignored
        s.compute_returns(torch.full((2, 1), 4.0), use_gae, 0.5, 0.5)
        GAETargets(0.5, 0.5, use_gae=use_gae).fill_returns(s)
        assert s.buffers["returns"][:2, :, 0].tolist() == [[1.25, 1.0], [4.0, 4.0]], use_gae


def test_truncation_flags_from_info_rows():
    # Env 0 names the key in column 1, env 2 never reported it; NaN = absent.
    names = [["success", TRUNCATION_KEY], [], ["x"]]
    infos = torch.tensor([[1.0, 1.0], [float("nan")] * 2, [0.0, float("nan")]])
    flags = truncated_from_info_rows(
        torch.tensor([0, 1, 2]), infos, names, torch.tensor([True, True, True])
    )
    assert flags.tolist() == [True, False, False]
    # Only an episode end can be a cut.
    flags = truncated_from_info_rows(torch.tensor([0]), infos[:1], names, torch.tensor([False]))
    assert flags.tolist() == [False]
