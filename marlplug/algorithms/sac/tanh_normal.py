"""SAC's squashed Gaussian policy as pure functions of the actor's raw output: reparameterized
TanhNormal samples in ``[-1, 1]`` and their log-probabilities, with padded action columns masked.

The actor's last layer gives ``2 * A`` numbers per row: the Gaussian's mean, then its log standard
deviation before squashing into ``[LOG_STD_MIN, LOG_STD_MAX]`` (a smooth bound, so its gradient
never vanishes at a clamp). The noise is an input: the program draws it from each agent's seed.
"""

from __future__ import annotations

import math

import torch

#: The log standard deviation's range (CleanRL's SAC bounds).
LOG_STD_MIN = -5.0
LOG_STD_MAX = 2.0
#: Uniform samples are kept this far from 0 and 1 before the inverse normal CDF (finite noise).
_UNIFORM_MARGIN = 1e-7

__all__ = ["LOG_STD_MAX", "LOG_STD_MIN", "deterministic_action", "normal_from_uniform_", "sample"]


def normal_from_uniform_(uniform: torch.Tensor) -> torch.Tensor:
    """Standard normal samples from uniform ones (in place): ``sqrt(2) * erfinv(2u - 1)``.

    >>> normal_from_uniform_(torch.tensor([0.5])).tolist()
    [0.0]
    """
    uniform.clamp_(_UNIFORM_MARGIN, 1.0 - _UNIFORM_MARGIN)
    return uniform.mul_(2).sub_(1).erfinv_().mul_(math.sqrt(2.0))


def _mean_and_log_std(raw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    action_dim = raw.shape[-1] // 2
    mean, pre_log_std = raw[..., :action_dim], raw[..., action_dim:]
    log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (torch.tanh(pre_log_std) + 1)
    return mean, log_std


def sample(
    raw: torch.Tensor, noise: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """A reparameterized TanhNormal sample ``[..., A]`` (zero in padded columns) and its
    log-probability ``[...]`` summed over the real action columns.

    ``raw`` ``[..., 2A]`` is the actor's output, ``noise`` ``[..., A]`` standard normal, ``mask``
    (broadcastable to ``[..., A]``) marks the real columns. Differentiable in ``raw``.

    >>> raw = torch.zeros(1, 4)  # mean 0, log std -1.5
    >>> action, log_prob = sample(raw, torch.zeros(1, 2), torch.tensor([True, False]))
    >>> action.tolist(), round(float(log_prob), 4)  # one real column: the Normal's log density
    ([[0.0, 0.0]], 0.5811)
    """
    mean, log_std = _mean_and_log_std(raw)
    pre_tanh = mean + log_std.exp() * noise
    # log N(u) - log(1 - tanh(u)^2), the latter as 2 (log 2 - u - softplus(-2u)) (stable for big u)
    log_density = -0.5 * noise.pow(2) - log_std - 0.5 * math.log(2 * math.pi)
    squash = 2.0 * (math.log(2.0) - pre_tanh - torch.nn.functional.softplus(-2.0 * pre_tanh))
    valid = mask.to(raw.dtype)
    log_prob = ((log_density - squash) * valid).sum(-1)
    return torch.tanh(pre_tanh) * valid, log_prob


def deterministic_action(raw: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The policy's mode ``tanh(mean)`` ``[..., A]`` (evaluation), padded columns zero.

    >>> deterministic_action(torch.zeros(1, 4), torch.tensor([True, True])).tolist()
    [[0.0, 0.0]]
    """
    mean, _ = _mean_and_log_std(raw)
    return torch.tanh(mean) * mask.to(raw.dtype)
