"""Stacked per-agent layers as pure functions: weights with a leading agent dimension, one batched
matmul for every agent. :mod:`marlplug.nn.stacked`'s modules run these same functions.

Everything is a pure function of its tensors, so an agent's update can run on any learner and give the
same result; batching a learner's agents is one ``bmm`` per layer instead of one module per agent.
(Per-agent clipping and Adam live in :mod:`marlplug.optim`.)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch


def mlp_shapes(prefix: str, sizes: Sequence[int]) -> list[tuple[str, tuple[int, ...]]]:
    """Per-agent parameter shapes of an MLP with layer widths ``sizes`` (input first).

    >>> mlp_shapes("actor", [4, 8, 2])
    [('actor.w0', (4, 8)), ('actor.b0', (8,)), ('actor.w1', (8, 2)), ('actor.b1', (2,))]
    """
    shapes: list[tuple[str, tuple[int, ...]]] = []
    for layer, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        shapes += [(f"{prefix}.w{layer}", (fan_in, fan_out)), (f"{prefix}.b{layer}", (fan_out,))]
    return shapes


def init_mlp(sizes: Sequence[int], generator: torch.Generator) -> list[torch.Tensor]:
    """One agent's MLP parameters: Glorot-uniform weights and zero biases (the authors' TF default)."""
    params: list[torch.Tensor] = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        weight = (torch.rand(fan_in, fan_out, generator=generator) * 2 - 1) * bound
        params += [weight, torch.zeros(fan_out)]
    return params


def stacked_linear(x: torch.Tensor, weight: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    """``offset + x @ weight`` for ``A`` agents at once: ``x`` ``[A, B, in]``, ``weight`` ``[A, in, out]``,
    ``offset`` broadcastable to ``[A, B, out]`` (a bias ``[A, 1, out]``, or a partial sum to add to).

    >>> stacked_linear(torch.ones(3, 2, 4), torch.ones(3, 4, 5), torch.zeros(3, 1, 5)).shape
    torch.Size([3, 2, 5])
    """
    if weight.shape[-1] == 1:
        # A one-column bmm dispatches to gemv for one agent and to gemm for several, which round
        # differently; a row-wise dot product gives every agent the same bits either way.
        return (x * weight.transpose(1, 2)).sum(-1, keepdim=True) + offset
    return torch.baddbmm(offset, x, weight)


def stacked_linear_shared_input(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> torch.Tensor:
    """``A`` linear layers that all read the same input: ``x`` ``[*batch, in]``, ``weight``
    ``[A, in, out]``, ``bias`` ``[A, out]``; returns ``[*batch, A, out]``.

    >>> stacked_linear_shared_input(torch.ones(2, 4), torch.ones(3, 4, 5), torch.zeros(3, 5)).shape
    torch.Size([2, 3, 5])
    """
    # All agents' weights side by side make one wide GEMM ([B, in] @ [in, A·out]); its weight
    # gradient is one GEMM too. A batched matmul over an expanded input does the same FLOPs as A
    # narrow GEMMs, ~15% slower on CPU.
    agents, fan_in, fan_out = weight.shape
    side_by_side = weight.permute(1, 0, 2).reshape(fan_in, -1)
    out = torch.addmm(bias.reshape(-1), x.reshape(-1, fan_in), side_by_side)
    return out.reshape(*x.shape[:-1], agents, fan_out)


def first_agent_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Agent 0's layer of a stacked ``weight`` ``[A, in, out]`` and ``bias`` ``[A, out]`` on
    ``x`` ``[*batch, in]``; returns ``[*batch, out]`` (parameter sharing: every agent's rows are
    agent 0's).

    >>> first_agent_linear(torch.ones(2, 4), torch.ones(3, 4, 5), torch.zeros(3, 5)).shape
    torch.Size([2, 5])
    """
    flat = x.reshape(-1, x.shape[-1])
    if weight.shape[-1] == 1:  # a one-column product as a row-wise dot, as stacked_linear does
        out = (flat * weight[0, :, 0]).sum(-1, keepdim=True) + bias[0]
    else:
        out = torch.addmm(bias[0], flat, weight[0])
    return out.reshape(*x.shape[:-1], weight.shape[-1])


def stacked_mlp(x: torch.Tensor, params: Sequence[torch.Tensor]) -> torch.Tensor:
    """Forward ``A`` MLPs at once: ``x`` is ``[A, B, in]``, weights ``[A, in, out]``, biases ``[A, out]``.

    Hidden layers use ReLU; the last layer is linear. Returns ``[A, B, out]``.

    >>> w0, b0 = torch.ones(3, 4, 5), torch.zeros(3, 5)
    >>> stacked_mlp(torch.ones(3, 2, 4), [w0, b0]).shape
    torch.Size([3, 2, 5])
    """
    layers = len(params) // 2
    for layer in range(layers):
        x = stacked_linear(x, params[2 * layer], params[2 * layer + 1].unsqueeze(1))
        if layer < layers - 1:
            # In place: the layer's output is saved by nothing but the ReLU's own backward.
            x = torch.relu_(x)
    return x


def gumbel_noise(shape: Sequence[int], generator: torch.Generator | None) -> torch.Tensor:
    """Standard Gumbel samples ``-log(-log(u))`` with ``u`` kept away from 0 and 1.

    >>> gumbel_noise((2, 3), torch.Generator().manual_seed(0)).shape
    torch.Size([2, 3])
    """
    return gumbel_from_uniform_(torch.rand(tuple(shape), generator=generator))


def gumbel_from_uniform_(uniform: torch.Tensor) -> torch.Tensor:
    """Turn uniform samples into Gumbel samples (in place where possible; see :func:`gumbel_noise`)."""
    return -torch.log(-torch.log(uniform.clamp_(1e-10, 1.0 - 1e-7)))
