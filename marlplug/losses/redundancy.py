"""The cross-agent redundancy penalty: squared correlations between agents' encoder features.

For agents i<j: X = (Z - mean) / sqrt(var + eps) with population statistics, C_ij = X_iᵀ X_j / B and
``L = coef · Σ_{i<j} ‖C_ij‖_F² / (d_i·d_j)``. All pairs come from one Gram product of the
concatenated, width-scaled standardized features, minus each agent's own diagonal block.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, Literal

import torch
from pydantic import Field
from torch.autograd.function import once_differentiable

from marlplug.errors import UserError
from marlplug.losses.alive_pairs import (
    alive_dead_features,
    alive_mean_abs_correlation,
    redundancy_alive_pairs,
)
from marlplug.losses.aux import AuxLoss
from marlplug.losses.standardize import column_mean_var, standardize_columns
from marlplug.options import Options as ConfigOptions

PairReduction = Literal["sum", "mean"]


def _check_features(features: list[torch.Tensor]) -> None:
    if not features:
        raise UserError("redundancy: needs the features of at least one agent, got an empty list")
    rows = {z.shape[0] for z in features}
    if any(z.ndim != 2 for z in features) or len(rows) != 1:
        shapes = [tuple(z.shape) for z in features]
        raise UserError(f"redundancy: expected [B, d_i] features with the same B, got {shapes}")


def _reduce_pairs(
    pair_sum: torch.Tensor, num_agents: int, pair_reduction: PairReduction
) -> torch.Tensor:
    if pair_reduction == "mean":
        return pair_sum / (num_agents * (num_agents - 1) / 2)
    return pair_sum


#: The least rows per band of :func:`symmetric_gram` (bands hold 250-499 rows); smaller bands save
#: more FLOPs but run slower GEMMs.
GRAM_BAND_ROWS = 250


def symmetric_gram(matrix: torch.Tensor, *, band_rows: int = GRAM_BAND_ROWS) -> torch.Tensor:
    """``matrix @ matrix.T``, computing only the blocks on and above the diagonal.

    The rows are cut into ``rows // band_rows`` bands; band ``a`` is multiplied only with bands
    ``b ≥ a`` and the lower triangle is mirrored from the upper one, so 4 bands do 10/16 of the FLOPs
    of one full product. Not differentiable (it writes into slices of its output): call it without
    autograd, as :class:`_CrossBlockEnergy` does.

    Examples:
        >>> a = torch.randn(600, 7, dtype=torch.float64)
        >>> torch.allclose(symmetric_gram(a, band_rows=200), a @ a.T)
        True
    """
    rows = matrix.shape[0]
    bands = max(1, rows // band_rows)
    if bands == 1:
        return matrix @ matrix.T
    gram = matrix.new_empty(rows, rows)
    edges = [round(rows * band / bands) for band in range(bands + 1)]
    for start, stop in itertools.pairwise(edges):
        torch.mm(matrix[start:stop], matrix[start:].T, out=gram[start:stop, start:])
        gram[stop:, start:stop] = gram[start:stop, stop:].T
    return gram


def _agent_blocks(scaled: torch.Tensor, widths: list[int]) -> torch.Tensor | list[torch.Tensor]:
    """Agent ``i``'s columns: one ``[M, B, d]`` view when the widths are equal, else a list."""
    if len(set(widths)) == 1:
        return scaled.unflatten(1, (len(widths), widths[0])).transpose(0, 1)
    return list(torch.split(scaled, widths, dim=1))


def _own_grams(blocks: torch.Tensor | list[torch.Tensor]) -> torch.Tensor:
    """Each agent's own ``Y_iᵀ Y_i``: ``[M, d, d]`` from one ``bmm`` when the widths are equal, else
    the blocks flattened and concatenated."""
    if isinstance(blocks, torch.Tensor):
        return torch.bmm(blocks.transpose(1, 2), blocks)
    return torch.cat([(block.T @ block).flatten() for block in blocks])


def _subtract_own_products(
    grad: torch.Tensor, blocks: torch.Tensor | list[torch.Tensor], own: torch.Tensor
) -> None:
    """``grad[:, agent i] -= Y_i (Y_iᵀ Y_i)`` in place, for every agent (``own`` from :func:`_own_grams`)."""
    if isinstance(blocks, torch.Tensor):
        products = torch.bmm(blocks, own)
        grad.view(grad.shape[0], own.shape[0], -1).sub_(products.transpose(0, 1))
        return
    widths = [block.shape[1] for block in blocks]
    block_grams = torch.split(own, [width * width for width in widths])
    for columns, block, block_gram, width in zip(
        torch.split(grad, widths, dim=1), blocks, block_grams, widths, strict=True
    ):
        columns.sub_(block @ block_gram.view(width, width))


class _CrossBlockEnergy(torch.autograd.Function):
    """``‖YᵀY‖_F² − Σ_i ‖Y_iᵀY_i‖_F²`` of the standardized, width-scaled features ``Y``.

    ``Y = (Z − mean)·r·c`` with ``r = 1/sqrt(var + eps)`` per column and ``c = 1/sqrt(d_i)`` on agent
    ``i``'s columns. The backward pass is written out, because autograd would:

    - differentiate the Gram product as two matrix products; the energy's gradient is
      ``dY = 4·(YYᵀ·Y − Y_i·Y_iᵀY_i)``, one product with the Gram kept from the forward pass;
    - take about ten passes over ``[B, D]`` to back-propagate the standardization, which needs
      three: ``dZ = r·c·(dY − mean(dY)) − (r/c)·Y·mean(dY·Y)`` (the variance's own derivative
      folds into the last term).
    """

    @staticmethod
    def forward(
        ctx: Any, concatenated: torch.Tensor, widths: list[int], eps: float
    ) -> torch.Tensor:
        mean, var = column_mean_var(concatenated)
        inv_std = torch.rsqrt(var + eps)
        column_scale = torch.cat(
            [concatenated.new_full((width,), 1.0 / math.sqrt(width)) for width in widths]
        )
        scaled = (concatenated - mean).mul_(inv_std * column_scale)
        ctx.widths = widths
        # ‖YᵀY‖_F = ‖YYᵀ‖_F: take the smaller Gram.
        ctx.feature_side = scaled.shape[1] <= scaled.shape[0]
        if ctx.feature_side:
            # YᵀY's diagonal blocks are the agents' own Y_iᵀY_i: zeroing them leaves exactly the
            # cross blocks, so neither the energy nor its gradient needs a subtraction.
            gram = symmetric_gram(scaled.T)
            edges = [0, *itertools.accumulate(widths)]
            for start, stop in itertools.pairwise(edges):
                gram[start:stop, start:stop] = 0.0
            ctx.save_for_backward(scaled, gram, inv_std, column_scale)
            return gram.square().sum()
        gram = symmetric_gram(scaled)
        own = _own_grams(_agent_blocks(scaled, widths))
        ctx.save_for_backward(scaled, gram, inv_std, column_scale, own)
        # A difference of two large sums (B ≤ Σd_i keeps them comparable to the result):
        # square-and-sum keeps float32 to ~1e-7, where vector_norm()² loses about 100x that.
        return gram.square().sum() - own.square().sum()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        if ctx.feature_side:
            scaled, cross_gram, inv_std, column_scale = ctx.saved_tensors
            grad = scaled @ cross_gram
        else:
            scaled, gram, inv_std, column_scale, own = ctx.saved_tensors
            grad = gram @ scaled
            _subtract_own_products(grad, _agent_blocks(scaled, ctx.widths), own)
        grad.mul_(4.0 * grad_output)
        # Back through the standardization: dZ = r·c·(dY − mean(dY)) − (r/c)·Y·mean(dY·Y).
        projection = (grad * scaled).mean(dim=0, keepdim=True)
        grad_mean = grad.mean(dim=0, keepdim=True)
        scale = inv_std * column_scale
        grad.sub_(grad_mean).mul_(scale)
        grad.addcmul_(scaled, projection * (inv_std / column_scale), value=-1.0)
        return grad, None, None


def redundancy_all_pairs(
    features: list[torch.Tensor],
    *,
    coef: float = 1.0,
    eps: float = 1e-5,
    pair_reduction: PairReduction = "sum",
) -> torch.Tensor:
    """The penalty over all pairs at once (exact); see the module docstring for the formula.

    Examples:
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> z = torch.randn(512, 4)
        >>> float(redundancy_all_pairs([z, z])) > 0.24  # identical features: ‖I‖²/16 = 0.25
        True
    """
    _check_features(features)
    num_agents = len(features)
    if num_agents < 2:
        return features[0].sum() * 0.0
    rows = features[0].shape[0]
    widths = [z.shape[1] for z in features]
    # _CrossBlockEnergy scales agent i's columns by 1/sqrt(d_i): that folds the 1/(d_i·d_j)
    # normalization of every pair into the one Gram.
    cross = _CrossBlockEnergy.apply(torch.cat(features, dim=1), widths, eps)
    pair_sum = cross / (2 * rows * rows)
    return coef * _reduce_pairs(pair_sum, num_agents, pair_reduction)


def redundancy_pair_loop(
    features: list[torch.Tensor],
    *,
    coef: float = 1.0,
    eps: float = 1e-5,
    pair_reduction: PairReduction = "sum",
) -> torch.Tensor:
    """The same penalty as a plain loop over pairs: the reference implementation for tests/benchmarks."""
    _check_features(features)
    num_agents = len(features)
    if num_agents < 2:
        return features[0].sum() * 0.0
    rows = features[0].shape[0]
    standardized = [standardize_columns(z, eps) for z in features]
    pair_sum = features[0].new_zeros(())
    for i in range(num_agents):
        for j in range(i + 1, num_agents):
            correlation = standardized[i].T @ standardized[j] / rows
            pair_sum = pair_sum + correlation.square().sum() / (
                standardized[i].shape[1] * standardized[j].shape[1]
            )
    return coef * _reduce_pairs(pair_sum, num_agents, pair_reduction)


#: Rows :func:`mean_abs_correlation` reads at most (a minibatch's rows come shuffled, so its first
#: rows are a sample): the independent-feature floor stays ~0.025 and the cost stays bounded.
CORRELATION_ROWS = 1024


@torch.no_grad()
def mean_abs_correlation(
    features: Sequence[torch.Tensor],
    *,
    eps: float = 1e-5,
    max_rows: int = CORRELATION_ROWS,
    alive: Sequence[torch.Tensor] | None = None,
) -> torch.Tensor:
    """The mean ``|corr|`` between the feature columns of two different agents, over the pairs of
    neighbouring agents ``(i, i+1 mod M)`` (every pair when M <= 3), on the first ``max_rows``
    rows (what the redundancy penalty pushes down; 0-d, detached; NaN with fewer than 2 agents).

    ``features`` holds one agent's ``[B, d]`` or a group's stacked ``[B, M_g, d_g]`` per entry; the
    agents are numbered in that order. A group's neighbouring pairs are one batched product.
    ``alive`` (one ``[B]`` bool per agent, where agents die): each pair on the rows where both were
    alive (:func:`~marlplug.losses.alive_pairs.alive_mean_abs_correlation`).

    A logged diagnostic, computed on every minibatch step: over all ``M(M-1)/2`` pairs and every
    row it would cost ``O(M² d² B)``, more than the PPO step itself at M = 32; neighbouring pairs
    on at most ``max_rows`` rows cost ``O(M d² max_rows)``.

    Independent features score about ``sqrt(2 / (pi B))`` on ``B`` rows (0.05 at 250 rows), copies
    of the same features about ``1/d`` plus that floor.

    Examples:
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> z = torch.randn(1000, 4)
        >>> 0.25 < float(mean_abs_correlation([z, -z])) < 0.3  # the diagonal: 4 of 16 entries are 1
        True
        >>> float(mean_abs_correlation([z, torch.randn(1000, 4)])) < 0.05
        True
        >>> group = torch.stack([z, -z, z], dim=1)  # [B, 3 agents, 4]: the same three agents
        >>> bool(torch.isclose(mean_abs_correlation([group]), mean_abs_correlation([z, -z, z])))
        True
    """
    if alive is not None:  # agents die: each pair on the rows where both were alive
        each_agent = [z for f in features for z in (f.unbind(1) if f.ndim == 3 else (f,))]
        return alive_mean_abs_correlation(each_agent, alive, eps=eps, max_rows=max_rows)
    # Agent-major [M_g, B, d_g] views of each group, standardized per agent and column.
    groups = [
        standardize_columns(
            (z if z.ndim == 3 else z.unsqueeze(1)).detach()[:max_rows].float(), eps
        ).transpose(0, 1)
        for z in features
    ]
    agents = sum(z.shape[0] for z in groups)
    if agents < 2:
        return torch.tensor(float("nan"))
    pair_means = []
    for index, z in enumerate(groups):
        if z.shape[0] > 1:  # (i, i+1) inside the group: one batched product
            pair_means.append(_pair_abs_correlation(z[:-1], z[1:]))
        if index < len(groups) - 1 or agents > 2:  # its last agent and the next group's first
            following = groups[(index + 1) % len(groups)]
            pair_means.append(_pair_abs_correlation(z[-1:], following[:1]))
    return torch.cat(pair_means).mean()


def _pair_abs_correlation(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """Mean ``|corr|`` of each pair of standardized ``[P, B, d]`` agents: ``[P]``."""
    return (torch.bmm(left.transpose(1, 2), right) / left.shape[1]).abs().mean((1, 2))


class RedundancyLoss(AuxLoss):
    """Cross-agent redundancy penalty ``coef · Σ_{i<j} ‖corr(Z_i, Z_j)‖_F² / (d_i·d_j)``.

    The sum runs over agent pairs (``pair_reduction: sum``, the default); ``mean`` divides by the
    number of pairs, like the Rust reference. Independent features still score about 1/B per pair.
    Because the gradient grows as 1/σ, a network can lower the penalty by killing feature units: the
    number of near-dead columns (population std below ``dead_threshold``) is reported as
    ``dead_features`` by :meth:`diagnostics`.

    The penalty is exact by default. ``sample_rows`` computes it on that many rows of the minibatch,
    drawn from torch's global RNG (which the joint trainer seeds for every minibatch step), cutting
    the ``O(B²·Σd_i)`` cost by ``(B/sample_rows)²``. That is an approximation: the independent-feature
    floor rises from 1/B to 1/sample_rows per pair and the gradient gets noisier (docs/concepts/joint-ppo.md
    has measured errors).

    Where agents die, joint PPO passes ``alive`` (one ``[B]`` bool per agent): each pair is then
    computed on the rows where both agents were alive (a pair with fewer than two adds nothing),
    ``dead_features`` on each agent's alive rows (:mod:`marlplug.losses.alive_pairs`).

    Args:
        coef: the weight λ of the penalty in the total loss.
        eps: added to the variance before the square root.
        pair_reduction: ``sum`` over pairs or ``mean`` over pairs.
        dead_threshold: a feature column whose std is below this counts as near-dead.
        sample_rows: compute the penalty on this many random rows (``None``: every row, exact).

    Examples:
        >>> loss = RedundancyLoss(coef=1.0)
        >>> z = torch.randn(256, 8)
        >>> float(loss([z, z, z])) > 3 * 8 / 64 - 0.01  # identical agents: ≥ 3 pairs × ‖I‖²/64
        True
    """

    class Options(ConfigOptions):
        """``losses: [{name: redundancy, coef: 0.1, pair_reduction: sum}]``."""

        coef: float = Field(0.1, ge=0.0, description="Weight λ of the penalty.")
        eps: float = Field(1e-5, gt=0.0, description="Added to the variance before sqrt.")
        pair_reduction: PairReduction = Field(
            "sum", description="'sum' over agent pairs, or 'mean' (divide by the number of pairs)."
        )
        dead_threshold: float = Field(
            1e-3, ge=0.0, description="A feature column with std below this counts as near-dead."
        )
        sample_rows: int | None = Field(
            None,
            ge=2,
            description="Compute the penalty on this many random rows of each minibatch (an "
            "approximation, see docs/concepts/joint-ppo.md); null: every row, exact.",
        )

    def __init__(
        self,
        *,
        coef: float = 0.1,
        eps: float = 1e-5,
        pair_reduction: PairReduction = "sum",
        dead_threshold: float = 1e-3,
        sample_rows: int | None = None,
    ) -> None:
        super().__init__()
        if pair_reduction not in ("sum", "mean"):
            raise UserError(
                f"redundancy.pair_reduction: got {pair_reduction!r}; choose sum or mean"
            )
        if sample_rows is not None and sample_rows < 2:
            raise UserError(f"redundancy.sample_rows: expected at least 2 rows, got {sample_rows}")
        self.coef = coef
        self.eps = eps
        self.pair_reduction: PairReduction = pair_reduction
        self.dead_threshold = dead_threshold
        self.sample_rows = sample_rows

    def forward(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        rows = features[0].shape[0] if features else 0
        if self.sample_rows is not None and rows > self.sample_rows:
            chosen = torch.randperm(rows, device=features[0].device)[: self.sample_rows]
            features = [z.index_select(0, chosen) for z in features]
            alive = None if alive is None else [a.index_select(0, chosen) for a in alive]
        if alive is None:
            return redundancy_all_pairs(
                features, coef=self.coef, eps=self.eps, pair_reduction=self.pair_reduction
            )
        # Agents die: each pair on the rows where both were alive (losses/alive_pairs.py).
        _check_features(features)
        if len(features) < 2:
            return features[0].sum() * 0.0
        pair_sum = redundancy_alive_pairs(features, alive, eps=self.eps)
        return self.coef * _reduce_pairs(pair_sum, len(features), self.pair_reduction)

    @torch.no_grad()
    def diagnostics(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        if alive is not None:
            return {"dead_features": alive_dead_features(features, alive, self.dead_threshold)}
        std = torch.cat([z.std(dim=0, unbiased=False) for z in features])
        return {"dead_features": (std < self.dead_threshold).sum()}

    def extra_repr(self) -> str:
        sampled = "" if self.sample_rows is None else f", sample_rows={self.sample_rows}"
        return f"coef={self.coef}, eps={self.eps}, pair_reduction={self.pair_reduction!r}{sampled}"
