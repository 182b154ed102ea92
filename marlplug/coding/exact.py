"""Exact coding of float states: learners combine the states' bit patterns, split into 16-bit integer
lanes, so decoding recovers every agent's state bit for bit rather than to floating-point round-off.

Why: a float64 decode of float32 states is exact only where an agent's value is not much smaller than
the other agents' values at the same position. Adam's second moments span many orders of magnitude
(and are often exactly 0), so such a decode returned ``v + 1e-20`` instead of ``v`` every round, and
the differences compounded over a run. Integers below 2**15 times the code's row sums are held exactly
in float64 and the decode error stays far below 0.5 for any subset the decoder accepts (condition
number up to 1e6: error about ``1e6 * 2**16 * 1e-16 < 1e-3``), so rounding the decoded lanes to the
nearest integer gives the exact bits back — zeros, signs, NaNs and infinities included.

Examples:
    >>> import torch
    >>> states = torch.tensor([[1e-30, -0.0, 3.5], [2.0e5, 1.0, float("inf")]])
    >>> lanes = to_lanes(states)
    >>> lanes.shape, lanes.dtype
    (torch.Size([2, 6]), torch.float64)
    >>> combined = lanes[0] * 0.3 + lanes[1] * 1.7                # what a coded learner returns
    >>> decoded = torch.stack([(combined - lanes[1] * 1.7) / 0.3, lanes[1]])
    >>> torch.equal(from_lanes(decoded, torch.float32).view(torch.int32), states.view(torch.int32))
    True
"""

from __future__ import annotations

import torch

#: The integer type whose bit patterns a float state is split into.
LANE_DTYPE = torch.int16

#: A decoded lane farther than this from an integer means the decode was not exact: replicas of an
#: agent's update disagreed, an answer was corrupted, or the subset was too ill-conditioned.
EXACTNESS_TOLERANCE = 0.25


class InexactDecodeError(RuntimeError):
    """Decoded lanes are not integers: the learners' answers are not consistent with one state."""


def lanes_per_value(dtype: torch.dtype) -> int:
    """How many 16-bit lanes one value of ``dtype`` takes (2 for float32, 4 for float64).

    Examples:
        >>> lanes_per_value(torch.float32), lanes_per_value(torch.float64)
        (2, 4)
    """
    return torch.empty((), dtype=dtype).element_size() // torch.empty((), dtype=LANE_DTYPE).element_size()


def to_lanes(states: torch.Tensor) -> torch.Tensor:
    """``[A, D]`` float states -> ``[A, D * lanes]`` float64 integers (the states' bit patterns).

    Learners combine these linearly (``y_j = Σ_i C[j, i] · lanes_i``) instead of the states themselves.
    """
    if not torch.is_floating_point(states):
        raise TypeError(f"to_lanes: expected floating-point states, got {states.dtype}")
    flat = states.detach().contiguous().reshape(states.shape[0], -1)
    return flat.view(LANE_DTYPE).to(torch.float64)


def lane_error(decoded: torch.Tensor) -> float:
    """The largest distance of a decoded lane from the nearest integer (0.0 for an exact decode)."""
    if decoded.numel() == 0:
        return 0.0
    return float((decoded - decoded.round()).abs().max())


def from_lanes(decoded: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Decoded ``[A, D * lanes]`` float64 lanes -> the exact ``[A, D]`` states of ``dtype``.

    Raises:
        InexactDecodeError: a lane is not within :data:`EXACTNESS_TOLERANCE` of an integer in range.
    """
    error = lane_error(decoded)
    info = torch.iinfo(LANE_DTYPE)
    rounded = decoded.round()
    if not error <= EXACTNESS_TOLERANCE or (
        rounded.numel() and (rounded.min() < info.min or rounded.max() > info.max)
    ):
        raise InexactDecodeError(
            f"decoded lanes are off by up to {error:.3g} from integers (limit "
            f"{EXACTNESS_TOLERANCE}): the learners' answers do not agree on one state"
        )
    return rounded.to(LANE_DTYPE).contiguous().view(dtype)
