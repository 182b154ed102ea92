"""Per-agent Adam over stacked weights: one functional implementation and a thin torch optimizer.

Every tensor has the agent as its leading dimension and every agent its own step count, so one Adam
over stacked weights equals one ``torch.optim.Adam`` per agent, even when some agents skip steps.
:func:`adam_` is the one implementation (torch's fused Adam kernel, in place); :func:`adam` is its
out-of-place form for pure update programs, and :class:`AgentAdam` wraps it as a
``torch.optim.Optimizer`` for modules (TorchRL users, the joint trainer).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.optim.adam import adam as _torch_adam

from marlplug.errors import UserError
from marlplug.optim.groups import AgentGroupParameters

__all__ = ["AdamSettings", "AgentAdam", "adam", "adam_"]


@dataclass(frozen=True)
class AdamSettings:
    """Adam's hyperparameters (``torch.optim.Adam``'s names and defaults, no weight decay)."""

    lr: float = 3e-4
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8


def lockstep_runs(active: torch.Tensor, steps: torch.Tensor) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of consecutive stepping agents that share one step count.

    Examples:
        >>> lockstep_runs(torch.tensor([True, True, False, True]), torch.tensor([3.0, 3, 3, 2]))
        [(0, 2), (3, 4)]
    """
    n_agents = active.shape[0]
    changes = (active[1:] != active[:-1]) | (steps[1:] != steps[:-1])
    edges = [0, *(torch.nonzero(changes).flatten() + 1).tolist(), n_agents]
    return [(start, stop) for start, stop in itertools.pairwise(edges) if bool(active[start])]


@torch.no_grad()
def adam_(
    params: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor],
    exp_avgs: Sequence[torch.Tensor],
    exp_avg_sqs: Sequence[torch.Tensor],
    steps: torch.Tensor | Sequence[torch.Tensor],
    active: torch.Tensor | None = None,
    *,
    settings: AdamSettings,
) -> None:
    """One Adam step of every active agent, in place: ``torch.optim.Adam``'s math, per-agent counts.

    Args:
        params: tensors ``[A, ...]`` (agent first), contiguous; updated in place.
        grads: their gradients (any layout).
        exp_avgs: Adam's first moments, laid out like ``params``; updated in place.
        exp_avg_sqs: Adam's second moments, likewise.
        steps: ``[A]`` float32 step counts before this step, one tensor for all ``params`` or one
            per tensor (a torch optimizer keeps one per parameter); incremented for active agents.
        active: ``[A]`` bool, the agents that step (all when ``None``); the others keep their
            parameters, moments and count.
        settings: learning rate, betas, eps.

    One call of torch's fused kernel (one pass over memory instead of about ten) takes whole tensors
    while every agent steps in lockstep (the usual case), else one slice per run of consecutive
    stepping agents that share a step count.

    Examples:
        >>> w, m, v = torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2, 3)
        >>> step = torch.zeros(2)
        >>> adam_([w], [torch.ones(2, 3)], [m], [v], step, torch.tensor([True, False]),
        ...       settings=AdamSettings(lr=0.1))
        >>> [round(x, 4) for x in w[0].tolist()], w[1].tolist(), step.tolist()
        ([-0.1, -0.1, -0.1], [0.0, 0.0, 0.0], [1.0, 0.0])
    """
    per_tensor = [steps] * len(params) if isinstance(steps, torch.Tensor) else list(steps)
    # What the fused kernel takes: parameters, gradients, first and second moments, step counts.
    run_tensors: tuple[list[torch.Tensor], ...] = ([], [], [], [])
    run_steps: list[torch.Tensor] = []
    masks: dict[int, torch.Tensor] = {}  # number of agents -> which of them step
    # Each parameter usually has its own count tensor, all holding the same counts: the runs of
    # each distinct (mask, counts) pair are found once, not once per tensor.
    known_runs: list[tuple[torch.Tensor, torch.Tensor, list[tuple[int, int]]]] = []
    for param, grad, avg, sq, count in zip(
        params, grads, exp_avgs, exp_avg_sqs, per_tensor, strict=True
    ):
        # The fused kernel pairs elements in memory order, so the parameter and its moments must be
        # laid out alike; the gradient is made so.
        if not all(t.is_contiguous() for t in (param, avg, sq)):
            raise UserError(
                f"per-agent Adam needs contiguous parameters and moments, got parameter strides "
                f"{param.stride()}"
            )
        grad = grad.contiguous()
        mask = _active_mask(active, param.shape[0], masks)
        for start, stop in _runs(mask, count, known_runs):
            tensors: tuple[torch.Tensor, ...] = (param, grad, avg, sq)
            if (start, stop) != (0, param.shape[0]):  # not every agent: views of the run's rows
                tensors = tuple(tensor[start:stop] for tensor in tensors)
            for run, tensor in zip(run_tensors, tensors, strict=True):
                run.append(tensor)
            run_steps.append(count[start].clone())  # the kernel increments its own copy
    if run_steps:
        run_params, run_grads, run_avgs, run_sqs = run_tensors
        beta1, beta2 = settings.betas
        _torch_adam(
            run_params,
            run_grads,
            run_avgs,
            run_sqs,
            [],
            run_steps,
            fused=True,
            amsgrad=False,
            beta1=beta1,
            beta2=beta2,
            lr=settings.lr,
            weight_decay=0.0,
            eps=settings.eps,
            maximize=False,
        )
    distinct = {id(count): count for count in per_tensor}
    increments: dict[tuple[int, torch.dtype], torch.Tensor] = {}
    for count in distinct.values():
        key = (count.shape[0], count.dtype)
        if key not in increments:
            increments[key] = _active_mask(active, count.shape[0], masks).to(count.dtype)
        count.add_(increments[key])


def _runs(
    mask: torch.Tensor,
    count: torch.Tensor,
    known: list[tuple[torch.Tensor, torch.Tensor, list[tuple[int, int]]]],
) -> list[tuple[int, int]]:
    """:func:`lockstep_runs` of ``mask`` and ``count``, looked up in ``known`` first (the same mask
    and equal counts) and added to it when new."""
    for known_mask, known_count, runs in known:
        if known_mask is mask and (known_count is count or torch.equal(known_count, count)):
            return runs
    runs = lockstep_runs(mask, count)
    known.append((mask, count, runs))
    return runs


def _active_mask(
    active: torch.Tensor | None, n_agents: int, masks: dict[int, torch.Tensor]
) -> torch.Tensor:
    """``active`` checked against ``n_agents``, or all ``True`` when it is None; made once per
    number of agents (``masks`` keeps them)."""
    if n_agents not in masks:
        mask = torch.ones(n_agents, dtype=torch.bool) if active is None else active
        if mask.shape != (n_agents,):
            raise UserError(
                f"per-agent Adam: the active mask has shape {tuple(mask.shape)}; the parameter "
                f"has {n_agents} agents"
            )
        masks[n_agents] = mask
    return masks[n_agents]


def adam(
    params: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor],
    exp_avgs: Sequence[torch.Tensor],
    exp_avg_sqs: Sequence[torch.Tensor],
    steps: torch.Tensor,
    active: torch.Tensor | None = None,
    *,
    settings: AdamSettings,
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """:func:`adam_` out of place: ``(params, exp_avgs, exp_avg_sqs, steps)`` after the step.

    The inputs are not modified; ``steps`` is one ``[A]`` count shared by every tensor.

    Examples:
        >>> w = torch.zeros(2, 1)
        >>> new, _, _, step = adam([w], [torch.ones(2, 1)], [w.clone()], [w.clone()],
        ...                        torch.zeros(2), settings=AdamSettings(lr=0.5))
        >>> [round(x, 4) for x in new[0].flatten().tolist()], w.flatten().tolist(), step.tolist()
        ([-0.5, -0.5], [0.0, 0.0], [1.0, 1.0])
    """
    new_params = [p.detach().clone(memory_format=torch.contiguous_format) for p in params]
    new_avgs = [m.detach().clone(memory_format=torch.contiguous_format) for m in exp_avgs]
    new_sqs = [v.detach().clone(memory_format=torch.contiguous_format) for v in exp_avg_sqs]
    new_steps = steps.detach().to(torch.float32).clone()
    adam_(new_params, grads, new_avgs, new_sqs, new_steps, active, settings=settings)
    return new_params, new_avgs, new_sqs, new_steps


class AgentAdam(torch.optim.Optimizer):
    """:func:`adam_` as a ``torch.optim.Optimizer`` over stacked per-agent weights.

    Each ``param_group`` is one agent group (``{"params": [...], "agent_group": name}``); its
    parameters keep their own ``step`` count per agent. Shared parameters (``"shared": True``)
    have one slot, stepped only when every agent of the group steps. Parameters must be contiguous.

    Args:
        params: an iterable of :class:`AgentGroupParameters` or of param-group dicts.
        lr: learning rate.
        betas: Adam's β1, β2.
        eps: Adam's ε.

    Examples:
        >>> w = torch.nn.Parameter(torch.zeros(2, 3))
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
            mask = None
            if active is not None and isinstance(name, str) and name in active:
                mask = active[name].to(torch.bool)
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            states = [self._state_of(p, shared=shared) for p in params]
            settings = AdamSettings(lr=group["lr"], betas=tuple(group["betas"]), eps=group["eps"])
            if shared:
                # One slot: the group's parameters seen through a leading dimension of size 1 (views,
                # so the in-place writes land), stepped only when every agent steps.
                everyone = torch.tensor([mask is None or bool(mask.all())])
                adam_(
                    [p.unsqueeze(0) for p in params],
                    [p.grad.unsqueeze(0) for p in params],
                    [s["exp_avg"].unsqueeze(0) for s in states],
                    [s["exp_avg_sq"].unsqueeze(0) for s in states],
                    [s["step"] for s in states],
                    everyone,
                    settings=settings,
                )
                continue
            if mask is not None and mask.shape != (params[0].shape[0],):
                raise UserError(
                    f"AgentAdam: active[{name!r}] has shape {tuple(mask.shape)}; the group has "
                    f"{params[0].shape[0]} agents"
                )
            adam_(
                params,
                [p.grad for p in params],
                [s["exp_avg"] for s in states],
                [s["exp_avg_sq"] for s in states],
                [s["step"] for s in states],
                mask,
                settings=settings,
            )

    def _state_of(self, param: torch.Tensor, *, shared: bool = False) -> dict[str, torch.Tensor]:
        state = self.state[param]
        if not state:
            state["step"] = torch.zeros(1 if shared else param.shape[0], dtype=torch.float32)
            state["exp_avg"] = torch.zeros_like(param, memory_format=torch.contiguous_format)
            state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.contiguous_format)
        return state
