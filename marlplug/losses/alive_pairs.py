"""Cross-agent feature statistics where agents die (MAgent2 battle): each pair of agents on the rows
where both were alive, each agent on its own alive rows.

A dead agent's row holds features of whatever the env wrote for it (zeros, a stale observation):
counted, it would correlate with nothing or with everything. So the pair ``(i, j)`` is computed,
exactly, as the unmasked statistic on the rows where ``alive[i] & alive[j]``; a pair with fewer
than two such rows has no correlation to measure and adds nothing. The rows differ from pair to
pair, so there is no one Gram product of every agent: ``O(M² B d²)``, every pair on its own rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from marlplug.losses.standardize import standardize_columns

__all__ = ["alive_dead_features", "alive_mean_abs_correlation", "redundancy_alive_pairs"]


def _pair_correlation(
    left: torch.Tensor, right: torch.Tensor, rows: torch.Tensor, eps: float
) -> torch.Tensor | None:
    """``corr(Z_i, Z_j)`` (``[d_i, d_j]``) on ``rows`` (bool ``[B]``); ``None`` below two rows."""
    count = int(rows.sum())
    if count < 2:
        return None
    left, right = standardize_columns(left[rows], eps), standardize_columns(right[rows], eps)
    return left.T @ right / count


def redundancy_alive_pairs(
    features: Sequence[torch.Tensor],
    alive: Sequence[torch.Tensor],
    *,
    eps: float = 1e-5,
) -> torch.Tensor:
    """``Σ_{i<j} ‖corr(Z_i, Z_j)‖_F² / (d_i·d_j)``, each pair on the rows where both agents were
    alive (the redundancy penalty's pair sum, before ``coef`` and ``pair_reduction``).

    ``O(M² B d²)``: every pair has its own rows.

    Examples:
        >>> z = torch.randn(64, 3)
        >>> alive = [torch.ones(64, dtype=torch.bool), torch.arange(64) < 32]
        >>> alone = redundancy_alive_pairs([z[:32], z[:32]], [alive[1][:32]] * 2)
        >>> bool(redundancy_alive_pairs([z, z], alive) == alone)  # the 32 rows both lived
        True
    """
    total = features[0].new_zeros(())
    for i in range(len(features)):
        for j in range(i + 1, len(features)):
            correlation = _pair_correlation(features[i], features[j], alive[i] & alive[j], eps)
            if correlation is not None:
                widths = features[i].shape[1] * features[j].shape[1]
                total = total + correlation.square().sum() / widths
    return total


@torch.no_grad()
def alive_mean_abs_correlation(
    features: Sequence[torch.Tensor],
    alive: Sequence[torch.Tensor],
    *,
    eps: float = 1e-5,
    max_rows: int = 1024,
) -> torch.Tensor:
    """:func:`~marlplug.losses.redundancy.mean_abs_correlation` where agents die: the mean
    ``|corr|`` over the same neighbouring pairs ``(i, i+1 mod M)`` (every pair when M <= 3), each
    on the first ``max_rows`` rows where both agents were alive; ``features`` one ``[B, d]`` per
    agent. NaN when no pair has two such rows.

    Examples:
        >>> from marlplug.losses.redundancy import mean_abs_correlation
        >>> z, y = torch.randn(100, 4), torch.randn(100, 4)
        >>> alive = [torch.arange(100) < 60, torch.ones(100, dtype=torch.bool)]
        >>> bool(alive_mean_abs_correlation([z, y], alive).isclose(mean_abs_correlation([z[:60], y[:60]])))
        True
    """
    agents = len(features)
    pairs = [(i, (i + 1) % agents) for i in range(agents)] if agents > 2 else [(0, 1)]
    means = []
    for i, j in pairs if agents >= 2 else []:
        rows = alive[i] & alive[j]
        rows &= rows.cumsum(0) <= max_rows  # the first max_rows rows both lived
        correlation = _pair_correlation(features[i].detach(), features[j].detach(), rows, eps)
        if correlation is not None:
            means.append(correlation.abs().mean())
    return torch.stack(means).mean() if means else torch.tensor(float("nan"))


@torch.no_grad()
def alive_dead_features(
    features: Sequence[torch.Tensor], alive: Sequence[torch.Tensor], threshold: float
) -> torch.Tensor:
    """Feature columns whose population std over the agent's alive rows is below ``threshold``
    (an agent alive on fewer than two rows has no std to judge and counts none).

    Examples:
        >>> z = torch.stack([torch.arange(4.0), torch.tensor([0.0, 0.0, 0.0, 9.0])], dim=1)
        >>> int(alive_dead_features([z], [torch.tensor([True, True, True, False])], 1e-3))
        1
    """
    count = torch.zeros((), dtype=torch.long)
    for agent_features, rows in zip(features, alive, strict=True):
        if int(rows.sum()) >= 2:
            count += (agent_features[rows].std(dim=0, unbiased=False) < threshold).sum()
    return count
