"""VER's truncated importance weights for variable per-environment sampling.

VER collects ``T * N`` steps from whichever environments are fastest, so an
environment's share of the batch ``n_e / S`` differs from the uniform share
``1 / N`` that lock-step collection (every env contributes ``T`` steps)
would give. Each step is weighted by the ratio of the two sampling
probabilities, truncated as in IMPALA (Espeholt et al. 2018) at a maximum
(1.0 in the VER paper, section 4 "Training")::

    w_e = min(max_weight, (1 / N) / (n_e / S)) = min(max_weight, S / (N * n_e))

Fast environments (over-sampled, ``n_e > S / N``) get ``w_e < 1``;
under-sampled ones would get ``w_e > 1`` and are truncated. With equal
counts every weight is exactly 1. This is the weight habitat-baselines'
VER computes (``(T + 1) / n_e`` over its buffer, which also counts each
env's bootstrap step); here ``S`` counts only learnable steps.
"""

from torch import Tensor

__all__ = ["truncated_importance_weights"]


def truncated_importance_weights(steps_per_env: Tensor, max_weight: float = 1.0) -> Tensor:
    """Per-environment truncated importance weight ``min(max_weight, S / (N n_e))``.

    Args:
        steps_per_env: number of learnable steps each environment contributed
            to the batch (``n_e``); ``S`` is their sum and ``N`` their count.
            An environment with no steps gets ``max_weight`` (its weight is
            never used: it has no samples).
        max_weight: truncation level (VER: 1.0), > 0.

    Returns:
        Weights as a new float32 tensor.

    Shapes:
        steps_per_env: ``[N]``; returns: ``[N]``.

    Raises:
        ValueError: if ``max_weight <= 0``, a count is negative or all are 0.
    """
    if max_weight <= 0:
        raise ValueError(f"max_weight must be > 0; got {max_weight}")
    if steps_per_env.dim() != 1 or steps_per_env.numel() == 0:
        raise ValueError(f"steps_per_env must be 1-D [N]; got {tuple(steps_per_env.shape)}")
    counts = steps_per_env.double()
    if bool((counts < 0).any()) or float(counts.sum()) == 0.0:
        raise ValueError(
            f"steps_per_env must be >= 0 with a positive sum; got {steps_per_env.tolist()}"
        )
    uniform_count = counts.sum() / counts.numel()  # S / N
    # n_e = 0 gives +inf, truncated to max_weight like any large weight.
    return (uniform_count / counts).clamp(max=max_weight).float()
