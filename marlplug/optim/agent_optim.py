"""Per-agent optimization over stacked weights: per-agent gradient norms, clipping, and a masked Adam.

A per-agent parameter has the agent as its leading dimension. An agent's gradient slice is clipped by
its own global L2 norm; an agent whose norm is not finite, or that is frozen, does not step, and
neither its parameters nor its optimizer state (step count included) move.

Shared parameters (``MultiAgentMLP(share_params=True)``) belong to every agent of their group, so no
agent owns them: they are clipped by their own global L2 norm (one budget per group), they step only
when every agent of the group steps (freezing any agent freezes them), and a non-finite shared
gradient skips the whole group.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.optim.adam import adam as functional_adam

from marlplug.errors import UserError
from marlplug.optim.agent_layout import split_parameters


@dataclass
class AgentGroupParameters:
    """The parameters of one agent group; ``param[i]`` belongs to agent ``i`` of the group.

    ``shared`` parameters have no agent dimension: every agent of the group uses all of them.

    Examples:
        >>> w = nn.Parameter(torch.zeros(3, 4))
        >>> AgentGroupParameters(group="agent", n_agents=3, params=[w]).n_agents
        3
    """

    group: str
    n_agents: int
    params: list[nn.Parameter]
    shared: list[nn.Parameter] = field(default_factory=list)

    def __post_init__(self) -> None:
        for param in self.params:
            if param.ndim == 0 or param.shape[0] != self.n_agents:
                raise UserError(
                    f"group '{self.group}': parameter of shape {tuple(param.shape)} has no leading "
                    f"agent dimension of size {self.n_agents}"
                )


def group_parameters(
    modules_by_group: Mapping[str, Sequence[nn.Module]],
) -> list[AgentGroupParameters]:
    """Collect each group's per-agent and shared parameters from its modules (actor, critic, ...).

    See :func:`marlplug.optim.agent_layout.split_parameters` for how they are told apart.
    """
    groups = []
    for group, modules in modules_by_group.items():
        n_agents, per_agent, shared = split_parameters(modules, group)
        groups.append(
            AgentGroupParameters(group=group, n_agents=n_agents, params=per_agent, shared=shared)
        )
    return groups


def _per_agent_view(tensor: torch.Tensor, n_agents: int) -> torch.Tensor:
    return tensor.reshape(n_agents, -1)


def _broadcastable(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return values.reshape(values.shape[0], *([1] * (like.ndim - 1)))


def per_agent_grad_norms(groups: Sequence[AgentGroupParameters]) -> torch.Tensor:
    """Global L2 norm of every agent's gradient slice, ``[total agents]`` in group order."""
    norms: list[torch.Tensor] = []
    for group in groups:
        squared = torch.zeros(group.n_agents, dtype=torch.float64)
        for param in group.params:
            if param.grad is not None:
                # Each parameter's norm in its own dtype (asking vector_norm for float64 would copy
                # the whole gradient first); the per-parameter sums add up in float64. A norm that
                # overflows float32 is redone in float64, so only a truly non-finite one stays so.
                view = _per_agent_view(param.grad, group.n_agents)
                param_norms = torch.linalg.vector_norm(view, dim=1).double()
                if not bool(torch.isfinite(param_norms).all()):
                    param_norms = torch.linalg.vector_norm(view, dim=1, dtype=torch.float64)
                squared += param_norms.square()
        norms.append(squared.sqrt())
    return torch.cat(norms)


def clip_grad_norm_per_agent_(
    groups: Sequence[AgentGroupParameters], max_norm: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale each agent's gradient slice by ``max_norm / ‖g_i‖`` when ``‖g_i‖`` exceeds it.

    Gradients of agents whose norm is not finite are zeroed.

    Returns:
        ``(norms, finite)``: the norms before clipping and a bool mask of the finite ones.

    Examples:
        >>> w = nn.Parameter(torch.zeros(2, 2))
        >>> w.grad = torch.tensor([[3.0, 4.0], [0.3, 0.4]])
        >>> norms, finite = clip_grad_norm_per_agent_([AgentGroupParameters("g", 2, [w])], 1.0)
        >>> [round(n, 4) for n in norms.tolist()], round(w.grad[0].norm().item(), 4), finite.tolist()
        ([5.0, 0.5], 1.0, [True, True])
    """
    norms = per_agent_grad_norms(groups)
    finite = torch.isfinite(norms)
    start = 0
    for group in groups:
        if group.shared and not _clip_shared_(group, max_norm):
            finite[start : start + group.n_agents] = False
        start += group.n_agents
    coefficients = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    coefficients = torch.where(finite, coefficients, torch.zeros_like(coefficients))
    all_finite = bool(finite.all())
    start = 0
    for group in groups:
        coef = coefficients[start : start + group.n_agents]
        ok = finite[start : start + group.n_agents]
        start += group.n_agents
        for param in group.params:
            if param.grad is None:
                continue
            grad = param.grad
            if all_finite:  # the usual case: scale in place
                grad.mul_(_broadcastable(coef, grad).to(grad.dtype))
                continue
            scaled = grad * _broadcastable(coef, grad).to(grad.dtype)
            param.grad = torch.where(_broadcastable(ok, grad), scaled, torch.zeros_like(grad))
    return norms, finite


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


def adam_update(
    param: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    step: torch.Tensor,
    *,
    lr: float,
    betas: tuple[float, float],
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One Adam step (torch.optim.Adam's math) with a per-agent step count; returns new tensors.

    ``step`` has one entry per leading index of ``param`` and is the count *after* this step.
    """
    beta1, beta2 = betas
    new_exp_avg = exp_avg.lerp(grad, 1 - beta1)
    new_exp_avg_sq = exp_avg_sq.mul(beta2).addcmul(grad, grad, value=1 - beta2)
    steps = step.double()
    bias_correction1 = 1 - beta1**steps
    bias_correction2_sqrt = (1 - beta2**steps).sqrt()
    step_size = _broadcastable((lr / bias_correction1).to(param.dtype), param)
    denom = (
        new_exp_avg_sq.sqrt() / _broadcastable(bias_correction2_sqrt.to(param.dtype), param)
    ).add(eps)
    new_param = param - step_size * (new_exp_avg / denom)
    return new_param, new_exp_avg, new_exp_avg_sq, step


class AgentAdam(torch.optim.Optimizer):
    """Adam over stacked per-agent weights, with one step count per agent and per-agent masking.

    Adam works element by element, so one optimizer over stacked weights equals one Adam per agent;
    keeping the step count per agent makes that hold even when some agents skip a step. Each
    ``param_group`` is one agent group (``{"params": [...], "agent_group": name}``). Each group takes
    one call of torch's fused Adam kernel (one pass over memory instead of about ten): whole tensors
    while every agent steps in lockstep (the usual case), else one slice per run of consecutive
    stepping agents that share a step count. Parameters must be contiguous.

    Args:
        params: an iterable of :class:`AgentGroupParameters` or of param-group dicts.
        lr: learning rate.
        betas: Adam's β1, β2.
        eps: Adam's ε.

    Examples:
        >>> w = nn.Parameter(torch.zeros(2, 3))
        >>> opt = AgentAdam([AgentGroupParameters("agent", 2, [w])], lr=0.1)
        >>> w.grad = torch.ones(2, 3)
        >>> opt.step(active={"agent": torch.tensor([True, False])})
        >>> [round(x, 4) for x in w[0].tolist()], w[1].tolist()
        ([-0.1, -0.1, -0.1], [0.0, 0.0, 0.0])
    """

    def __init__(
        self,
        params: Iterable[AgentGroupParameters] | Iterable[dict[str, Any]],
        *,
        lr: float = 3e-4,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        param_groups: list[dict[str, Any]] = []
        for entry in params:
            if isinstance(entry, AgentGroupParameters):
                if entry.params:
                    param_groups.append({"params": entry.params, "agent_group": entry.group})
                if entry.shared:
                    param_groups.append(
                        {"params": entry.shared, "agent_group": entry.group, "shared": True}
                    )
            else:
                param_groups.append(dict(entry))
        super().__init__(param_groups, {"lr": lr, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(  # type: ignore[override]
        self,
        closure: Callable[[], float] | None = None,
        *,
        active: Mapping[str, torch.Tensor] | None = None,
    ) -> None:
        """Step every agent whose ``active[group][i]`` is true (all when ``active`` is None)."""
        if closure is not None:
            with torch.enable_grad():
                closure()
        for group in self.param_groups:
            name = group.get("agent_group")
            shared = bool(group.get("shared", False))
            group_mask = None
            if active is not None and isinstance(name, str) and name in active:
                group_mask = active[name].to(torch.bool)
            batch = _FusedBatch()
            for param in group["params"]:
                if param.grad is None:
                    continue
                if shared:
                    # One slot: the whole group's parameter, stepped only when every agent steps.
                    everyone = group_mask is None or bool(group_mask.all())
                    batch.add(param, self._state_of(param, shared=True), torch.tensor([everyone]))
                    continue
                n_agents = param.shape[0]
                mask = torch.ones(n_agents, dtype=torch.bool)
                if group_mask is not None:
                    mask = group_mask
                    if mask.shape != (n_agents,):
                        raise UserError(
                            f"AgentAdam: active[{name!r}] has shape {tuple(mask.shape)}; the "
                            f"group has {n_agents} agents"
                        )
                batch.add(param, self._state_of(param), mask)
            batch.step(group)

    def _state_of(self, param: torch.Tensor, *, shared: bool = False) -> dict[str, torch.Tensor]:
        state = self.state[param]
        if not state:
            state["step"] = torch.zeros(1 if shared else param.shape[0], dtype=torch.float32)
            state["exp_avg"] = torch.zeros_like(param)
            state["exp_avg_sq"] = torch.zeros_like(param)
        # The fused kernel pairs elements in memory order, so the parameter and its moments must be
        # laid out alike (checked every step: loaded or hand-written state skips the creation above).
        if not all(t.is_contiguous() for t in (param, state["exp_avg"], state["exp_avg_sq"])):
            raise UserError(
                f"AgentAdam needs contiguous parameters and moments, got parameter strides "
                f"{param.stride()}"
            )
        return state


def _lockstep_runs(mask: torch.Tensor, steps: torch.Tensor) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of consecutive stepping agents that share one step count.

    Examples:
        >>> _lockstep_runs(torch.tensor([True, True, False, True]), torch.tensor([3.0, 3, 3, 2]))
        [(0, 2), (3, 4)]
    """
    n_agents = mask.shape[0]
    changes = (mask[1:] != mask[:-1]) | (steps[1:] != steps[:-1])
    edges = [0, *(torch.nonzero(changes).flatten() + 1).tolist(), n_agents]
    return [(start, stop) for start, stop in itertools.pairwise(edges) if bool(mask[start])]


class _FusedBatch:
    """The tensors of one param group for a single call of torch's fused Adam kernel.

    Each run of consecutive stepping agents that share a step count goes in as one slice with a
    copy of that count (the whole tensor while every agent steps in lockstep, the usual case);
    agents that do not step are left out, so nothing of theirs moves. The kernel increments its
    step copies; :meth:`step` then adds one to every stepping agent's own count.
    """

    def __init__(self) -> None:
        self.params: list[torch.Tensor] = []
        self.grads: list[torch.Tensor] = []
        self.exp_avgs: list[torch.Tensor] = []
        self.exp_avg_sqs: list[torch.Tensor] = []
        self.steps: list[torch.Tensor] = []
        self.stepped: list[tuple[torch.Tensor, torch.Tensor]] = []

    def add(self, param: torch.Tensor, state: dict[str, torch.Tensor], mask: torch.Tensor) -> None:
        assert param.grad is not None
        grad = param.grad.contiguous()  # the kernel walks param and grad in the same flat order
        steps = state["step"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        if param.ndim == 0 or steps.shape[0] != param.shape[0]:
            # A shared parameter: one slot, seen through a leading dimension of size 1 (views, so
            # the kernel's in-place writes land in the parameter and its moments).
            param, grad = param.unsqueeze(0), grad.unsqueeze(0)
            exp_avg, exp_avg_sq = exp_avg.unsqueeze(0), exp_avg_sq.unsqueeze(0)
        for start, stop in _lockstep_runs(mask, steps):
            self.params.append(param[start:stop])
            self.grads.append(grad[start:stop])
            self.exp_avgs.append(exp_avg[start:stop])
            self.exp_avg_sqs.append(exp_avg_sq[start:stop])
            self.steps.append(steps[start].clone())
        self.stepped.append((steps, mask))

    def step(self, group: dict[str, Any]) -> None:
        if not self.params:
            return
        beta1, beta2 = group["betas"]
        functional_adam(
            self.params,
            self.grads,
            self.exp_avgs,
            self.exp_avg_sqs,
            [],
            self.steps,
            fused=True,
            amsgrad=False,
            beta1=beta1,
            beta2=beta2,
            lr=group["lr"],
            weight_decay=0.0,
            eps=group["eps"],
            maximize=False,
        )
        for steps, mask in self.stepped:
            steps.add_(mask.to(steps.dtype))
