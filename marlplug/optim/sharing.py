"""Parameter sharing over per-agent rows: a group whose agents' rows start equal stays equal when
every agent steps with the group's mean gradient (per-agent clipping and Adam then do the same
thing to every row), so one policy is trained without giving up the per-agent layout that the
optimizer, checkpoints and coded training read.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = [
    "group_mean_gradients",
    "group_numbers",
    "mean_within_groups",
    "seed_sources",
    "whole_groups",
]


def group_numbers(groups: Sequence[str]) -> torch.Tensor:
    """``[M]`` each agent's group number, groups numbered in order of first appearance (the
    ``group_map`` order when ``groups`` lists every agent's group in agent order).

    Examples:
        >>> group_numbers(["adversary", "agent", "adversary"]).tolist()
        [0, 1, 0]
    """
    order = list(dict.fromkeys(groups))
    return torch.tensor([order.index(name) for name in groups], dtype=torch.long)


def seed_sources(group: torch.Tensor, share: bool) -> list[int]:
    """The agent whose seed draws each agent's fresh networks: itself, or with ``share`` its
    group's first agent, so that every row of a shared group starts equal (``group`` ``[M]``: each
    agent's group number).

    Examples:
        >>> seed_sources(torch.tensor([0, 1, 0, 1]), share=True)
        [0, 1, 0, 1]
        >>> seed_sources(torch.tensor([1, 0, 0]), share=True)
        [0, 1, 1]
        >>> seed_sources(torch.tensor([1, 0, 0]), share=False)
        [0, 1, 2]
    """
    if not share:
        return list(range(len(group)))
    return [int(torch.nonzero(group == number)[0]) for number in group.tolist()]


def group_mean_gradients(grads: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Every agent's gradient (dim 0 indexes agents) replaced by the group's mean.

    Examples:
        >>> group_mean_gradients([torch.tensor([[1.0, 2.0], [3.0, 6.0]])])[0].tolist()
        [[2.0, 4.0], [2.0, 4.0]]
    """
    return [grad.mean(dim=0, keepdim=True).expand_as(grad).contiguous() for grad in grads]


def mean_within_groups(grads: Sequence[torch.Tensor], group: torch.Tensor) -> list[torch.Tensor]:
    """Every row's gradient (dim 0 indexes rows) replaced by the mean over the rows of its group
    (``group`` ``[R]``: each row's group number), as :func:`group_mean_gradients` does for one group.

    Examples:
        >>> grads = [torch.tensor([[1.0], [5.0], [3.0]])]
        >>> mean_within_groups(grads, torch.tensor([0, 1, 0]))[0].flatten().tolist()
        [2.0, 5.0, 2.0]
    """
    grads = list(grads)
    for number in group.unique().tolist():
        members = torch.nonzero(group == number).flatten()
        means = group_mean_gradients([grad.index_select(0, members) for grad in grads])
        grads = [grad.index_copy(0, members, mean) for grad, mean in zip(grads, means, strict=True)]
    return grads


def whole_groups(agents: Sequence[int], group: torch.Tensor) -> list[int]:
    """Every agent of the groups ``agents`` belong to, in agent order (``group`` ``[M]``: each
    agent's group number): the agents whose losses must run for ``agents``' group mean gradients.

    Examples:
        >>> whole_groups([2], torch.tensor([0, 1, 0, 1]))
        [0, 2]
    """
    groups = {int(group[agent]) for agent in agents}
    return [i for i in range(len(group)) if int(group[i]) in groups]
