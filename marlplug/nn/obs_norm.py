"""Observation normalization: the networks read each agent's observation standardized by running
statistics of that agent's observations, clipped to ``[-clip, clip]`` (SB3's ``VecNormalize``,
CleanRL's ``NormalizeObservation``; 5 is their clip).

:class:`ObservationNormalizer` is the first layer of a group's encoder and of its critic (each
wrapped in :class:`ObservationNormalized`). Its state is one stacked per-agent parameter
(``[n_agents, 2 * observation_dim + 1]``: mean, variance, count), so it travels in each agent's
``theta`` row with the weights (checkpoints, resume, coded learners, evaluation) and never receives
a gradient. PPO's rollout source folds every rollout's observations into it before the update
(:meth:`ObservationNormalizer.update`), the alive agents' rows only where agents die; nothing else
changes it.
"""

from __future__ import annotations

import torch
from torch import nn

#: SB3's and CleanRL's bound of a standardized observation.
DEFAULT_CLIP = 5.0
#: Added to the variance before the square root (SB3's epsilon): a constant observation column
#: standardizes to 0 instead of dividing by zero.
EPSILON = 1e-8


def merged_moments(
    mean: torch.Tensor,
    var: torch.Tensor,
    count: torch.Tensor,
    rows: torch.Tensor,
    weight: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The exact mean, (population) variance and count of the values summarized by ``(mean, var,
    count)`` together with ``rows`` (``[n, *shape]``, each of the others ``[*shape]`` or ``[*shape,
    1]`` for the count): Chan et al.'s parallel update, SB3's ``RunningMeanStd``. Compute it in
    float64 where the count grows into the millions.

    ``weight`` (0/1, ``rows``' shape or broadcastable to it, e.g. ``[n, n_agents, 1]``) merges only
    the rows where it is 1, each column its own count (dead agents' rows of a battle); a column
    with no such row keeps its moments.

    Examples:
        >>> mean, var, count = torch.zeros(1), torch.ones(1), torch.zeros(1)  # nothing seen yet
        >>> mean, var, count = merged_moments(mean, var, count, torch.tensor([[1.0], [3.0]]))
        >>> mean.tolist(), var.tolist(), count.tolist()
        ([2.0], [1.0], [2.0])
        >>> [t.tolist() for t in merged_moments(mean, var, count, torch.tensor([[5.0], [7.0]]))]
        [[4.0], [5.0], [4.0]]
        >>> rows, weight = torch.tensor([[5.0], [99.0], [7.0]]), torch.tensor([[1.0], [0.0], [1.0]])
        >>> [t.tolist() for t in merged_moments(mean, var, count, rows, weight)]  # 99 left out
        [[4.0], [5.0], [4.0]]
    """
    if weight is None:
        batch_count: torch.Tensor | float = float(rows.shape[0])
        batch_mean = rows.mean(0)
        batch_var = rows.var(0, correction=0)
    else:
        weight = weight.to(rows.dtype)
        batch_count = weight.sum(0)
        batch_mean = (rows * weight).sum(0) / batch_count.clamp(min=1.0)
        batch_var = ((rows - batch_mean) ** 2 * weight).sum(0) / batch_count.clamp(min=1.0)
    total = count + batch_count
    delta = batch_mean - mean
    new_mean = mean + delta * (batch_count / total)
    spread = count * var + batch_count * batch_var + delta**2 * count * batch_count / total
    if weight is None:
        return new_mean, spread / total, total
    # A column with no row in play keeps its moments (0 / 0 there otherwise).
    seen = torch.as_tensor(batch_count) > 0
    return torch.where(seen, new_mean, mean), torch.where(seen, spread / total, var), total


class ObservationNormalizer(nn.Module):
    """Per-agent running mean/variance of observations; ``forward`` standardizes and clips.

    The statistics are the exact mean and (population) variance of every observation folded in so
    far (Chan et al.'s parallel update, as SB3's ``RunningMeanStd``): a rollout of ``n`` rows with
    mean ``m`` and variance ``v`` updates, with ``N' = N + n``::

        mean' = mean + (m - mean) n / N'
        var'  = (N var + n v + (m - mean)^2 N n / N') / N'

    Before any update the layer is the identity followed by the clip (mean 0, variance 1).

    Args:
        n_agents: agents of the group (one set of statistics each).
        observation_dim: width of each agent's observation.
        clip: bound of a standardized observation.

    Examples:
        >>> norm = ObservationNormalizer(n_agents=2, observation_dim=1)
        >>> norm.update(torch.tensor([[[1.0], [10.0]], [[3.0], [30.0]]]))  # [rows, agents, obs]
        >>> norm.moments()[0].flatten().tolist(), norm.moments()[1].flatten().tolist()
        ([2.0, 20.0], [1.0, 100.0])
        >>> norm(torch.tensor([[[3.0], [0.0]]])).tolist()  # (obs - mean) / std
        [[[1.0], [-2.0]]]
        >>> norm(torch.tensor([[[100.0], [0.0]]])).tolist()  # clipped to [-5, 5]
        [[[5.0], [-2.0]]]
    """

    def __init__(self, *, n_agents: int, observation_dim: int, clip: float = DEFAULT_CLIP) -> None:
        super().__init__()
        self.n_agents = n_agents
        self.observation_dim = observation_dim
        self.clip = clip
        initial = torch.cat(
            [
                torch.zeros(n_agents, observation_dim),
                torch.ones(n_agents, observation_dim),
                torch.zeros(n_agents, 1),
            ],
            dim=-1,
        )
        # A parameter, not a buffer: the per-agent rows (theta) pack parameters only. It never
        # gets a gradient (read detached), so Adam leaves it where update() puts it.
        self.stats = nn.Parameter(initial, requires_grad=False)

    def moments(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(mean [n_agents, d], variance [n_agents, d], count [n_agents, 1])``, detached."""
        stats = self.stats.detach()
        dim = self.observation_dim
        return stats[:, :dim], stats[:, dim : 2 * dim], stats[:, 2 * dim :]

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        """``[*batch, n_agents, d]`` observations -> standardized and clipped, same shape."""
        mean, var, _ = self.moments()
        # A decoded (coded) row may carry a variance of -1e-12: never the root of a negative.
        standardized = (observation - mean) / (var.clamp(min=0.0) + EPSILON).sqrt()
        return standardized.clamp(-self.clip, self.clip)

    @torch.no_grad()
    def update(self, observations: torch.Tensor, alive: torch.Tensor | None = None) -> None:
        """Fold observations (``[*batch, n_agents, d]``) into the statistics, in place; with
        ``alive`` (bool, ``[*batch, n_agents]``: TorchRL's dead-agent ``mask``) only the rows of
        agents in play (a dead agent's observation is whatever the env writes for it)."""
        # float64 for the merge: the count grows into the millions over a run.
        rows = observations.detach().reshape(-1, self.n_agents, self.observation_dim).double()
        mean, var, count = (part.double() for part in self.moments())
        weight = None if alive is None else alive.reshape(-1, self.n_agents, 1)
        new_mean, new_var, total = merged_moments(mean, var, count, rows, weight)
        self.stats.copy_(torch.cat([new_mean, new_var, total], dim=-1).to(self.stats.dtype))

    def extra_repr(self) -> str:
        return f"n_agents={self.n_agents}, observation_dim={self.observation_dim}, clip={self.clip}"


class ObservationNormalized(nn.Module):
    """``network`` reading its ``[*, n_agents, d]`` input through ``normalizer``.

    Examples:
        >>> net = ObservationNormalized(nn.Linear(2, 1), ObservationNormalizer(n_agents=1,
        ...                                                                    observation_dim=2))
        >>> [name for name, _ in net.named_parameters()]
        ['network.weight', 'network.bias', 'normalizer.stats']
    """

    def __init__(self, network: nn.Module, normalizer: ObservationNormalizer) -> None:
        super().__init__()
        # The network's weights come first in parameters(): TorchRL's hold_out_net (GAE) decides
        # from the first parameter's requires_grad whether to hold the critic out of the graph, and
        # the statistics have none, so with them first GAE's values would carry a graph.
        self.network = network
        self.normalizer = normalizer

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.network(self.normalizer(observation))


def observation_normalizers(module: nn.Module) -> list[ObservationNormalizer]:
    """Every :class:`ObservationNormalizer` inside ``module`` (none: ``[]``).

    Examples:
        >>> net = nn.Sequential(ObservationNormalizer(n_agents=1, observation_dim=2), nn.Linear(2, 1))
        >>> [norm.observation_dim for norm in observation_normalizers(net)]
        [2]
    """
    return [m for m in module.modules() if isinstance(m, ObservationNormalizer)]
