"""Per-agent gradient clipping: each agent's gradient slice is scaled to a global L2 norm of at most
``max_norm`` (``torch.nn.utils.clip_grad_norm_``'s rule, one budget per agent).

An agent whose norm is not finite gets a zero gradient and is reported as not finite (it must not
step). :func:`clip_per_agent` is the one rule, out of place on stacked gradients;
:func:`clip_grad_norm_per_agent_` applies it in place to modules' ``.grad`` and adds the rule for
shared parameters (``MultiAgentMLP(share_params=True)``): they are clipped by their own global norm
(one budget per group), and a non-finite shared gradient skips the whole group.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from marlplug.optim.groups import AgentGroupParameters

__all__ = ["clip_grad_norm_per_agent_", "clip_per_agent", "per_agent_norms"]


def per_agent_norms(grads: Sequence[torch.Tensor | None], n_agents: int) -> torch.Tensor:
    """``[n_agents]`` float64: the global L2 norm of each agent's slice of ``grads`` (agent first).

    Examples:
        >>> per_agent_norms([torch.tensor([[3.0, 4.0], [0.0, 1.0]]), None], 2).tolist()
        [5.0, 1.0]
    """
    views = [grad.reshape(n_agents, -1) for grad in grads if grad is not None]
    squared = _squared_norms(views, n_agents, redo_overflow=False)
    if not bool(torch.isfinite(squared).all()):
        # A norm that overflows float32 is redone in float64, so only a truly non-finite one stays
        # so. float64 squares of float32 norms cannot overflow, so one check covers every tensor.
        squared = _squared_norms(views, n_agents, redo_overflow=True)
    return squared.sqrt()


def _squared_norms(
    views: Sequence[torch.Tensor], n_agents: int, *, redo_overflow: bool
) -> torch.Tensor:
    """Sum over ``views`` ``[A, n]`` of each row's squared L2 norm, in float64. Each norm is taken
    in its tensor's dtype (asking vector_norm for float64 would copy the whole gradient first);
    with ``redo_overflow``, a tensor whose norms are not all finite is redone in float64."""
    squared = torch.zeros(n_agents, dtype=torch.float64)
    for view in views:
        norms = torch.linalg.vector_norm(view, dim=1).double()
        if redo_overflow and not bool(torch.isfinite(norms).all()):
            norms = torch.linalg.vector_norm(view, dim=1, dtype=torch.float64)
        squared += norms.square()
    return squared


def _coefficients(norms: torch.Tensor, finite: torch.Tensor, max_norm: float) -> torch.Tensor:
    """``min(1, max_norm / (norm + 1e-6))`` per agent, 0 where the agent must not step."""
    coefficients = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    return torch.where(finite, coefficients, torch.zeros_like(coefficients))


def _scaled(grad: torch.Tensor, coefficients: torch.Tensor, finite: torch.Tensor) -> torch.Tensor:
    """``grad`` scaled per agent, exactly 0 for non-finite agents (``inf * 0`` would be NaN)."""
    shape = (-1, *([1] * (grad.ndim - 1)))
    scaled = grad * coefficients.reshape(shape).to(grad.dtype)
    if bool(finite.all()):
        return scaled
    return torch.where(finite.reshape(shape), scaled, torch.zeros_like(grad))


def clip_per_agent(
    grads: Sequence[torch.Tensor], max_norm: float, finite: torch.Tensor | None = None
) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """Clip each agent's gradients (dim 0 indexes agents) to a global L2 norm of ``max_norm``.

    Args:
        grads: stacked gradients ``[A, ...]``.
        max_norm: each agent's budget.
        finite: ``[A]`` bool; ``False`` marks agents that must not step for another reason.

    Returns:
        ``(clipped, norms, finite)``: new gradients, the norms before clipping (float64) and which
        agents may step (finite norm); the others' gradients are zero.

    Examples:
        >>> (clipped,), norms, finite = clip_per_agent([torch.tensor([[3.0, 4.0], [0.3, 0.4]])], 1.0)
        >>> [round(n, 4) for n in norms.tolist()], round(clipped[0].norm().item(), 4), finite.tolist()
        ([5.0, 0.5], 1.0, [True, True])
    """
    n_agents = grads[0].shape[0]
    norms = per_agent_norms(grads, n_agents)
    ok = torch.isfinite(norms) if finite is None else torch.isfinite(norms) & finite
    coefficients = _coefficients(norms, ok, max_norm)
    return [_scaled(grad, coefficients, ok) for grad in grads], norms, ok


def clip_grad_norm_per_agent_(
    groups: Sequence[AgentGroupParameters], max_norm: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`clip_per_agent` in place on every group's ``.grad``, with shared parameters.

    Returns:
        ``(norms, finite)`` over all groups' agents in group order: the per-agent norms before
        clipping and which agents may step.

    Examples:
        >>> w = torch.nn.Parameter(torch.zeros(2, 2))
        >>> w.grad = torch.tensor([[3.0, 4.0], [0.3, 0.4]])
        >>> norms, finite = clip_grad_norm_per_agent_([AgentGroupParameters("g", 2, [w])], 1.0)
        >>> [round(n, 4) for n in norms.tolist()], round(w.grad[0].norm().item(), 4), finite.tolist()
        ([5.0, 0.5], 1.0, [True, True])
    """
    all_norms, all_finite = [], []
    for group in groups:
        grads = [param.grad for param in group.params]
        norms = per_agent_norms(grads, group.n_agents)
        finite = torch.isfinite(norms)
        if group.shared and not _clip_shared_(group, max_norm):
            finite[:] = False
        coefficients = _coefficients(norms, finite, max_norm)
        everyone = bool(finite.all())
        in_dtype: dict[torch.dtype, torch.Tensor] = {}  # the coefficients in each grad's dtype
        for param in group.params:
            if param.grad is None:
                continue
            if everyone:  # the usual case: scale in place, no copy
                dtype = param.grad.dtype
                if dtype not in in_dtype:
                    in_dtype[dtype] = coefficients.to(dtype)
                shape = (-1, *([1] * (param.grad.ndim - 1)))
                param.grad.mul_(in_dtype[dtype].reshape(shape))
            else:
                param.grad = _scaled(param.grad, coefficients, finite)
        all_norms.append(norms)
        all_finite.append(finite)
    return torch.cat(all_norms), torch.cat(all_finite)


def _clip_shared_(group: AgentGroupParameters, max_norm: float) -> bool:
    """Clip the group's shared gradients by their own global norm; ``False`` (and zeroed
    gradients) when that norm is not finite."""
    grads = [param.grad for param in group.shared if param.grad is not None]
    if not grads:
        return True
    norm = torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(grad, dtype=torch.float64) for grad in grads])
    )
    if not bool(torch.isfinite(norm)):
        for grad in grads:
            grad.zero_()
        return False
    coefficient = float((max_norm / (norm + 1e-6)).clamp(max=1.0))
    for grad in grads:
        grad.mul_(coefficient)
    return True
