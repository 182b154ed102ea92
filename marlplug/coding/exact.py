"""Exact coding of float32 states: learners combine each value's *ordinal* (its position among all
float32 values, an integer) rather than the value, so decoding gives every agent's state back bit for bit.

Why: a float decode is exact only where an agent's value is not much smaller than the other agents'
values at the same position. Adam's second moments span many orders of magnitude (and are often exactly
0), so a float64 decode returned ``v + 1e-20`` instead of ``v`` every round, and the differences
compounded over a run. Ordinals are integers below 2**31; float64 holds them and their combinations to
about ``2**31 * 1e-16 ≈ 2e-7`` per unit of condition number, so rounding the decoded ordinals recovers
them exactly for any subset with a condition number up to about 1e5 (every built-in code but the
authors' Vandermonde), and to within a unit or two — one or two float32 ulps, whatever the magnitude —
up to the decoder's limit of 1e6. The map is monotone, so replicas that disagree by a few ulps (BLAS
kernels differ per shape on some CPUs) decode to a value between them, never to garbage.

``-0.0`` comes back as ``0.0``; NaNs and infinities come back as themselves. States of other dtypes
(float64) are combined as they are.

Examples:
    >>> import torch
    >>> states = torch.tensor([[1e-30, 0.0, -3.5], [2.0e5, 1.0, float("inf")]])
    >>> ordinals = to_ordinals(states)
    >>> ordinals.dtype, ordinals[0, 1].item()
    (torch.float64, 0.0)
    >>> combined = ordinals[0] * 0.3 + ordinals[1] * 1.7                # what a coded learner sends
    >>> decoded = torch.stack([(combined - ordinals[1] * 1.7) / 0.3, ordinals[1]])
    >>> torch.equal(from_ordinals(decoded, torch.float32), states)
    True
"""

from __future__ import annotations

import torch

_SIGN = -(2**31)  # the int32 bit pattern of -0.0
_LIMIT = 2**31 - 1


def to_ordinals(states: torch.Tensor) -> torch.Tensor:
    """Float32 states -> their ordinals as float64 (other float dtypes: the values as float64).

    The ordinal of ``x`` is its int32 bit pattern for ``x >= +0`` and minus the pattern of ``-x``
    below: consecutive float32 values have consecutive ordinals, across zero too.
    """
    if not torch.is_floating_point(states):
        raise TypeError(f"to_ordinals: expected floating-point states, got {states.dtype}")
    if states.dtype != torch.float32:
        return states.detach().to(torch.float64)
    bits = states.detach().contiguous().view(torch.int32).to(torch.int64)
    # A negative float's pattern is 2**31 + magnitude bits; its ordinal is minus the magnitude bits.
    return torch.where(bits < 0, _SIGN - bits, bits).to(torch.float64)


def from_ordinals(decoded: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Decoded float64 ordinals -> the nearest float32 states (other dtypes: a plain cast)."""
    if dtype != torch.float32:
        return decoded.to(dtype)
    ordinals = decoded.nan_to_num(nan=0.0).round().clamp(-_LIMIT, _LIMIT).to(torch.int64)
    bits = torch.where(ordinals < 0, _SIGN - ordinals, ordinals)
    return bits.to(torch.int32).view(torch.float32)
