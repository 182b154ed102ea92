"""Value normalization (MAPPO's ``ValueNorm``): critics predict standardized returns.

Cooperative navigation's discounted returns are around -65 while a freshly initialized critic
outputs about 0: with Adam's steps of about ``lr`` per weight the critic needs thousands of updates
just to reach the returns' scale, and explains nothing meanwhile. MAPPO (Yu et al. 2022) keeps a
running mean and variance of the value targets, trains the critic on standardized targets and
de-standardizes its output wherever a value is read (GAE, value clipping).

:class:`ValueNormalizer` is the critic's last layer: it maps the network's standardized output to
the returns' scale with per-agent running statistics. Its state is one stacked per-agent parameter
(``[n_agents, 3]``: mean, variance, weight), so it travels in each agent's ``theta`` row with the
weights (checkpoints, resume, coded updates) and never receives a gradient: the loss updates it in
place from each minibatch's value targets (:meth:`ValueNormalizer.update`), before its forward.
"""

from __future__ import annotations

import torch
from torch import nn

#: MAPPO's ValueNorm decay: the statistics are (nearly) the running average of every minibatch seen.
DEFAULT_BETA = 0.99999
#: MAPPO's lower bound of the variance (std >= 0.1), so early tiny variances do not blow up.
MIN_VARIANCE = 1e-2


class ValueNormalizer(nn.Module):
    """Per-agent running mean/variance of value targets; ``forward`` de-standardizes a critic output.

    The statistics follow MAPPO's debiased exponential moving average of minibatch moments
    (``E[x]`` and ``E[x^2]`` with decay ``beta``), kept as mean, variance and weight
    ``w = sum_k beta^k`` so every entry stays of the order of the returns (a coded, decoded row
    carries round-off relative to its largest entries). A minibatch with mean ``m`` and variance
    ``v`` updates, with ``a = 1 / (beta w + 1)``::

        mean' = mean + a (m - mean)
        var'  = (1 - a) var + a v + a (1 - a) (m - mean)^2
        w'    = beta w + 1

    which equals MAPPO's ``E[x^2] - E[x]^2`` form exactly (the first minibatch sets mean and variance
    to its own, ``a = 1``).

    Args:
        n_agents: agents of the group (one set of statistics each).
        beta: decay of the moving average.
        min_variance: lower bound of the variance used to standardize.

    Examples:
        >>> norm = ValueNormalizer(n_agents=2)
        >>> norm.update(torch.tensor([[[-60.0], [-10.0]], [[-70.0], [-30.0]]]))  # [rows, agents, 1]
        >>> norm.stats[:, :2].tolist()  # per agent: mean, variance
        [[-65.0, 25.0], [-20.0, 100.0]]
        >>> norm(torch.tensor([[[1.0], [-1.0]]])).tolist()  # mean + std * standardized output
        [[[-60.0], [-30.0]]]
        >>> norm.normalize(torch.tensor([[[-65.0], [-10.0]]])).tolist()
        [[[0.0], [1.0]]]
    """

    def __init__(
        self, *, n_agents: int, beta: float = DEFAULT_BETA, min_variance: float = MIN_VARIANCE
    ) -> None:
        super().__init__()
        self.n_agents = n_agents
        self.beta = beta
        self.min_variance = min_variance
        # A parameter, not a buffer: the per-agent rows (theta) pack parameters only. It never
        # gets a gradient (read detached), so Adam leaves it where update() puts it.
        self.stats = nn.Parameter(torch.zeros(n_agents, 3), requires_grad=False)

    def moments(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean, std)``, each ``[n_agents, 1]``, detached."""
        stats = self.stats.detach()
        return stats[:, 0:1], stats[:, 1:2].clamp(min=self.min_variance).sqrt()

    def forward(self, standardized: torch.Tensor) -> torch.Tensor:
        """``[*batch, n_agents, 1]`` standardized values -> values on the returns' scale."""
        mean, std = self.moments()
        return standardized * std + mean

    def normalize(self, values: torch.Tensor) -> torch.Tensor:
        """``[*batch, n_agents, 1]`` values on the returns' scale -> standardized."""
        mean, std = self.moments()
        return (values - mean) / std

    @torch.no_grad()
    def update(self, targets: torch.Tensor, alive: torch.Tensor | None = None) -> None:
        """Fold one minibatch of value targets (``[*batch, n_agents, 1]``) into the statistics, in
        place; with ``alive`` (bool, ``[*batch, n_agents]``) only the rows of agents in play (an
        agent with none keeps its statistics)."""
        rows = targets.detach().reshape(-1, self.n_agents).to(self.stats.dtype)
        if alive is None:
            batch_mean = rows.mean(0)
            batch_var = rows.var(0, correction=0)
        else:
            weight_rows = alive.reshape(-1, self.n_agents).to(rows.dtype)
            count = weight_rows.sum(0).clamp(min=1.0)
            batch_mean = (rows * weight_rows).sum(0) / count
            batch_var = ((rows - batch_mean) ** 2 * weight_rows).sum(0) / count
        mean, var, weight = self.stats.detach().unbind(-1)
        new_weight = self.beta * weight + 1.0
        share = 1.0 / new_weight
        delta = batch_mean - mean
        new_var = (1.0 - share) * var + share * batch_var + share * (1.0 - share) * delta**2
        new_stats = torch.stack([mean + share * delta, new_var, new_weight], dim=-1)
        if alive is not None:
            seen = alive.reshape(-1, self.n_agents).any(0).unsqueeze(-1)
            new_stats = torch.where(seen, new_stats, self.stats.detach())
        self.stats.copy_(new_stats)

    def extra_repr(self) -> str:
        return f"n_agents={self.n_agents}, beta={self.beta}"


def value_normalizer(critic: nn.Module) -> ValueNormalizer | None:
    """The :class:`ValueNormalizer` inside ``critic``, or ``None`` when it has none.

    Examples:
        >>> value_normalizer(nn.Sequential(nn.Linear(2, 1), ValueNormalizer(n_agents=1))).n_agents
        1
        >>> value_normalizer(nn.Linear(2, 1)) is None
        True
    """
    for module in critic.modules():
        if isinstance(module, ValueNormalizer):
            return module
    return None
