"""Shared helpers for the policy tests."""

import numpy as np
import torch


def random_obs(space, batch=2, seed=0):
    """A random batch for every key of a Dict observation space."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for k, s in space.spaces.items():
        if s.dtype == np.uint8:
            out[k] = torch.randint(0, 256, (batch, *s.shape), generator=g, dtype=torch.uint8)
        else:
            out[k] = torch.rand(batch, *s.shape, generator=g)
    return out
