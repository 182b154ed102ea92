"""One agent group's clipped-PPO terms, per row and per agent, computed as TorchRL's ClipPPOLoss does.

:func:`group_terms` returns ``[rows, n_agents]`` elementwise terms (to be reduced by the loss) and
``[n_agents]`` detached diagnostics; the caller supplies the group's tensors already read from the
tensordict.
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
    advantage: torch.Tensor, exclude_dims: tuple[int, ...], eps: float
) -> torch.Tensor:
    """TorchRL's advantage standardization (statistics over every dim but ``exclude_dims``)."""
    if advantage.numel() < 2 or advantage.shape[0] < 2:
        return advantage
    return _standardize(advantage, exclude_dims, eps=eps)


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
) -> dict[str, torch.Tensor]:
    """Elementwise ``objective``, ``value_loss``, ``entropy`` (``[rows, n_agents]``) and per-agent
    diagnostics (``[n_agents]``) of one group's minibatch.

    ``advantage``, ``value_target``, ``value`` and ``old_value`` keep their stored shape
    (``[*batch, n_agents, 1]``) so advantage standardization sees the dims TorchRL's would.
    """
    if settings.normalize_advantage:
        advantage = standardize_advantage(
            advantage, settings.normalize_advantage_exclude_dims, settings.advantage_eps
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

    with torch.no_grad():
        eps = torch.finfo(target.dtype).eps
        residual = torch.var(target - value, dim=0, correction=0)
        diagnostics = {
            "policy_loss": objective.mean(dim=0),
            "value_loss": value_loss.mean(dim=0),
            "entropy": entropy.mean(dim=0),
            "clip_fraction": (clipped_log_ratio != log_ratio).to(ratio.dtype).mean(dim=0),
            "approx_kl": ((ratio - 1.0) - log_ratio).mean(dim=0),
            # TorchRL's kl_approx: the plain mean of log(pi_old / pi).
            "kl_approx": (-log_ratio).mean(dim=0),
            "explained_variance": 1.0 - residual / (torch.var(target, dim=0, correction=0) + eps),
            # TorchRL's effective sample size, per agent, divided by the rows.
            "ess": (2 * log_ratio.logsumexp(0) - (2 * log_ratio).logsumexp(0)).exp()
            / log_ratio.shape[0],
        }
        if value_clip_fraction is not None:
            diagnostics["value_clip_fraction"] = value_clip_fraction
        ratios = ratio.detach()
    return {
        "objective": objective,
        "value_loss": value_loss,
        "entropy": entropy,
        "ratio": ratios,
        **{f"diag/{name}": value.detach() for name, value in diagnostics.items()},
    }
