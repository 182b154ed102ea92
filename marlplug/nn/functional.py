"""Functional building blocks for updating many agents at once: stacked per-agent MLPs (weights with a
leading agent dimension), per-agent gradient clipping and an Adam step on explicit optimizer state.

Everything is a pure function of its tensors, so an agent's update can run on any learner and give the
same result; batching a learner's agents is one ``bmm`` per layer instead of one module per agent.
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


def clip_per_agent(grads: Sequence[torch.Tensor], max_norm: float) -> list[torch.Tensor]:
    """Scale each agent's gradients (dim 0 indexes agents) to a global L2 norm of at most ``max_norm``.

    Same rule as ``torch.nn.utils.clip_grad_norm_`` applied to each agent's tensors on their own:
    ``coef = min(1, max_norm / (norm + 1e-6))``. Agents never share a clipping budget.
    """
    # Tensor by tensor, in order: a reduction over a stacked [tensors, agents] array would sum in an
    # order that depends on the number of agents, and replicas must agree to the bit.
    squares = grads[0].reshape(grads[0].shape[0], -1).pow(2).sum(dim=1)
    for grad in grads[1:]:
        squares = squares + grad.reshape(grad.shape[0], -1).pow(2).sum(dim=1)
    coef = (max_norm / (squares.sqrt() + 1e-6)).clamp(max=1.0)
    return [g * coef.reshape(-1, *([1] * (g.dim() - 1))) for g in grads]


def adam_step(
    params: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor],
    exp_avgs: Sequence[torch.Tensor],
    exp_avg_sqs: Sequence[torch.Tensor],
    step: torch.Tensor,
    *,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """One Adam step (``torch.optim.Adam``'s formula) on stacked per-agent tensors, out of place.

    Args:
        step: ``[A]`` step counts before this step (float; exact up to 2**24).

    Returns:
        ``(params, exp_avgs, exp_avg_sqs, step)`` after the step.
    """
    beta1, beta2 = betas
    # A decoded state carries float64 round-off: a step count of 2.9999999 or a second moment of
    # -1e-20 where the true value is 0. Snap the count and keep the moment non-negative.
    new_step = step.round() + 1
    new_params, new_avgs, new_sqs = [], [], []
    for param, grad, avg, sq in zip(params, grads, exp_avgs, exp_avg_sqs, strict=True):
        shape = (-1, *([1] * (param.dim() - 1)))
        count = new_step.reshape(shape)
        avg = avg.lerp(grad, 1 - beta1)
        sq = sq.clamp(min=0.0) * beta2 + grad * grad * (1 - beta2)
        bias_correction1 = 1 - beta1**count
        bias_correction2_sqrt = (1 - beta2**count).sqrt()
        denom = sq.sqrt() / bias_correction2_sqrt + eps
        new_params.append(param - (lr / bias_correction1) * avg / denom)
        new_avgs.append(avg)
        new_sqs.append(sq)
    return new_params, new_avgs, new_sqs, new_step
