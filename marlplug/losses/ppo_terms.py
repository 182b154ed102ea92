"""One agent group's clipped-PPO terms, per row and per agent, computed as TorchRL's ClipPPOLoss does.

:func:`group_terms` returns ``[rows, n_agents]`` elementwise terms (to be reduced by the loss) and
``[n_agents]`` detached diagnostics; the caller supplies the group's tensors already read from the
tensordict. Where agents die mid-episode (MAgent2 battle: TorchRL's ``PettingZooWrapper`` keeps
every agent's row and writes a group ``mask``), the rows of dead agents are left out of the
advantage statistics and every diagnostic, and come back zeroed with a weight the loss reduces by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.distributions import Categorical
from torchrl._utils import _standardize
from torchrl.objectives.utils import distance_loss


def entropy_of(distribution: Any, samples: int = 1) -> torch.Tensor:
    """The distribution's entropy; a ``samples``-sample estimate ``-mean log p(x)`` where it has no
    closed form (TanhNormal), as TorchRL's ClipPPOLoss estimates it."""
    if (
        type(distribution) is Categorical
    ):  # not subclasses (masked, one-hot) with entropies of their own
        # ``Categorical.entropy`` recomputes a softmax of its already-normalized logits; over a few
        # actions that softmax is several times slower than ``exp`` (the same values, to rounding).
        log_p = distribution.logits.clamp(min=torch.finfo(distribution.logits.dtype).min)
        return -(log_p.exp() * log_p).sum(-1)
    try:
        return distribution.entropy()
    except NotImplementedError:
        draw = distribution.rsample if distribution.has_rsample else distribution.sample
        sample = draw((samples,))
        return -distribution.log_prob(sample).mean(0)


def standardize_advantage(
    advantage: torch.Tensor,
    exclude_dims: tuple[int, ...],
    eps: float,
    alive: torch.Tensor | None = None,
) -> torch.Tensor:
    """TorchRL's advantage standardization (statistics over every dim but ``exclude_dims``); with
    ``alive`` (a bool of ``advantage``'s shape) the mean and the (unbiased) std are those of the
    alive entries only.

    Examples:
        >>> advantage = torch.tensor([[1.0], [3.0], [100.0]])
        >>> alive = torch.tensor([[True], [True], [False]])
        >>> standardize_advantage(advantage, (), 1e-6, alive)[:2].flatten().tolist()
        [-0.7071067690849304, 0.7071067690849304]
    """
    if advantage.numel() < 2 or advantage.shape[0] < 2:
        return advantage
    if alive is None:
        return _standardize(advantage, exclude_dims, eps=eps)
    excluded = {dim % advantage.dim() for dim in exclude_dims}
    dims = tuple(dim for dim in range(advantage.dim()) if dim not in excluded)
    weight = alive.to(advantage.dtype)
    count = weight.sum(dims, keepdim=True)
    mean = (advantage * weight).sum(dims, keepdim=True) / count.clamp(min=1.0)
    variance = ((advantage - mean) ** 2 * weight).sum(dims, keepdim=True)
    std = (variance / (count - 1.0).clamp(min=1.0)).sqrt()
    return _standardize(advantage, exclude_dims, mean=mean, std=std, eps=eps)


def masked_mean(values: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    """Per-agent mean over rows (dim 0) of ``values`` ``[rows, n_agents]``, over the rows where
    ``weight`` is 1 (``None``: every row); an agent with no such row gets 0.

    Examples:
        >>> values = torch.tensor([[1.0, 5.0], [3.0, 7.0]])
        >>> masked_mean(values, torch.tensor([[1.0, 0.0], [1.0, 0.0]])).tolist()
        [2.0, 0.0]
    """
    if weight is None:
        return values.mean(dim=0)
    return (values * weight).sum(dim=0) / weight.sum(dim=0).clamp(min=1.0)


@dataclass
class PpoSettings:
    """The settings :func:`group_terms` needs."""

    clip_epsilon: float
    clip_value: float | None
    loss_critic_type: str
    normalize_advantage: bool
    normalize_advantage_exclude_dims: tuple[int, ...]
    advantage_eps: float
    samples_mc_entropy: int


def group_terms(
    settings: PpoSettings,
    distribution: Any,
    action: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantage: torch.Tensor,
    value_target: torch.Tensor,
    value: torch.Tensor,
    old_value: torch.Tensor | None,
    n_agents: int,
    alive: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Elementwise ``objective``, ``value_loss``, ``entropy`` (``[rows, n_agents]``) and per-agent
    diagnostics (``[n_agents]``) of one group's minibatch.

    ``advantage``, ``value_target``, ``value`` and ``old_value`` keep their stored shape
    (``[*batch, n_agents, 1]``) so advantage standardization sees the dims TorchRL's would.

    ``alive`` (bool, ``[*batch, n_agents]``; ``None``: every agent) marks the rows of agents that
    were in play when they acted: the others are left out of the advantage statistics and the
    diagnostics (masked means), their elementwise terms are zero and ``weight`` (``[rows,
    n_agents]``, 1 alive, 0 dead) tells the loss what to reduce over.
    """
    weight = None if alive is None else alive.reshape(-1, n_agents).to(advantage.dtype)
    if settings.normalize_advantage:
        advantage = standardize_advantage(
            advantage,
            settings.normalize_advantage_exclude_dims,
            settings.advantage_eps,
            None if alive is None else alive.reshape(advantage.shape),
        )
    advantage = advantage.reshape(-1, n_agents)
    log_prob = distribution.log_prob(action).reshape(-1, n_agents)
    log_ratio = log_prob - old_log_prob.reshape(-1, n_agents)
    ratio = log_ratio.exp()
    low, high = math.log1p(-settings.clip_epsilon), math.log1p(settings.clip_epsilon)
    clipped_log_ratio = log_ratio.clamp(low, high)
    objective = -torch.minimum(ratio * advantage, clipped_log_ratio.exp() * advantage)
    entropy = entropy_of(distribution, settings.samples_mc_entropy).reshape(-1, n_agents)

    target = value_target.reshape(-1, n_agents)
    value = value.reshape(-1, n_agents)
    value_loss = distance_loss(target, value, loss_function=settings.loss_critic_type)
    value_clip_fraction = None
    if settings.clip_value is not None and old_value is not None:
        old = old_value.reshape(-1, n_agents)
        clipped_value = old + (value - old).clamp(-settings.clip_value, settings.clip_value)
        clipped_loss = distance_loss(target, clipped_value, loss_function=settings.loss_critic_type)
        value_loss = torch.maximum(value_loss, clipped_loss)
        with torch.no_grad():
            value_clip_fraction = (clipped_value != value).to(value.dtype).mean(dim=0)

    if weight is not None:
        # A dead agent's row holds zeros the env wrote for it and an action nobody took: it adds
        # nothing to any term (where, not a product: a non-finite term on a dead row stays out).
        dead = weight == 0
        objective, value_loss, entropy = (
            term.masked_fill(dead, 0.0) for term in (objective, value_loss, entropy)
        )
        if value_clip_fraction is not None:
            value_clip_fraction = masked_mean(
                (clipped_value != value).to(value.dtype), weight
            ).detach()

    with torch.no_grad():
        eps = torch.finfo(target.dtype).eps

        def mean(values: torch.Tensor) -> torch.Tensor:
            return masked_mean(values, weight)

        def variance(values: torch.Tensor) -> torch.Tensor:
            if weight is None:
                return torch.var(values, dim=0, correction=0)
            return mean((values - mean(values)) ** 2)

        # Log-weights of the rows for the effective sample size: a dead row weighs nothing.
        log_ratio_alive = (
            log_ratio if weight is None else log_ratio.masked_fill(weight == 0, -math.inf)
        )
        rows = log_ratio.shape[0] if weight is None else weight.sum(0).clamp(min=1.0)
        diagnostics = {
            "policy_loss": mean(objective),
            "value_loss": mean(value_loss),
            "entropy": mean(entropy),
            "clip_fraction": mean((clipped_log_ratio != log_ratio).to(ratio.dtype)),
            "approx_kl": mean((ratio - 1.0) - log_ratio),
            # TorchRL's kl_approx: the plain mean of log(pi_old / pi).
            "kl_approx": mean(-log_ratio),
            "explained_variance": 1.0 - variance(target - value) / (variance(target) + eps),
            # TorchRL's effective sample size, per agent, divided by the rows.
            "ess": (2 * log_ratio_alive.logsumexp(0) - (2 * log_ratio_alive).logsumexp(0)).exp()
            / rows,
        }
        if weight is not None:  # an agent dead on every row: no sample, an ESS of 0 (not NaN)
            diagnostics["ess"] = diagnostics["ess"].nan_to_num(0.0)
        if value_clip_fraction is not None:
            diagnostics["value_clip_fraction"] = value_clip_fraction
        ratios = ratio.detach() if weight is None else ratio.detach().masked_fill(weight == 0, 1.0)
    terms = {
        "objective": objective,
        "value_loss": value_loss,
        "entropy": entropy,
        "ratio": ratios,
        **{f"diag/{name}": value.detach() for name, value in diagnostics.items()},
    }
    if weight is not None:
        terms["weight"] = weight
    return terms
