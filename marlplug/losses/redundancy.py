"""The cross-agent redundancy penalty: squared correlations between agents' encoder features.

For agents i<j: X = (Z - mean) / sqrt(var + eps) with population statistics, C_ij = X_iᵀ X_j / B and
``L = coef · Σ_{i<j} ‖C_ij‖_F² / (d_i·d_j)``. All pairs come from one Gram product of the
concatenated, width-scaled standardized features, minus each agent's own diagonal block.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from pydantic import Field

from marlplug.config import Options as ConfigOptions
from marlplug.errors import UserError
from marlplug.losses.aux import AuxLoss

PairReduction = Literal["sum", "mean"]


def _check_features(features: list[torch.Tensor]) -> None:
    if not features:
        raise UserError("redundancy: needs the features of at least one agent, got an empty list")
    rows = {z.shape[0] for z in features}
    if any(z.ndim != 2 for z in features) or len(rows) != 1:
        shapes = [tuple(z.shape) for z in features]
        raise UserError(f"redundancy: expected [B, d_i] features with the same B, got {shapes}")


def standardize_columns(features: torch.Tensor, eps: float) -> torch.Tensor:
    """``(Z - mean) / sqrt(var + eps)`` per column with the population variance."""
    mean = features.mean(dim=0, keepdim=True)
    var = features.var(dim=0, unbiased=False, keepdim=True)
    return (features - mean) * torch.rsqrt(var + eps)


def _reduce_pairs(
    pair_sum: torch.Tensor, num_agents: int, pair_reduction: PairReduction
) -> torch.Tensor:
    if pair_reduction == "mean":
        return pair_sum / (num_agents * (num_agents - 1) / 2)
    return pair_sum


def _block_grams(scaled: torch.Tensor, widths: list[int]) -> list[torch.Tensor]:
    """Each agent's own ``Y_iᵀ Y_i`` (one ``bmm`` when the widths are equal)."""
    rows = scaled.shape[0]
    if len(set(widths)) == 1:
        blocks = scaled.reshape(rows, len(widths), widths[0]).transpose(0, 1)
        return list(torch.bmm(blocks.transpose(1, 2), blocks).unbind(0))
    return [block.T @ block for block in torch.split(scaled, widths, dim=1)]


class _CrossBlockEnergy(torch.autograd.Function):
    """``‖YᵀY‖_F² − Σ_i ‖Y_iᵀY_i‖_F²``: the squared entries of every off-diagonal agent block.

    Autograd would differentiate the Gram product as two matrix products (one per operand); the
    energy's gradient is ``4·Y·(YᵀY) = 4·(YYᵀ)·Y``, a single product with the Gram kept from the
    forward pass, so forward + backward costs two Gram-sized products instead of three.
    """

    @staticmethod
    def forward(ctx: Any, scaled: torch.Tensor, widths: list[int]) -> torch.Tensor:
        # ‖YᵀY‖_F = ‖YYᵀ‖_F: take the smaller Gram.
        feature_side = scaled.shape[1] <= scaled.shape[0]
        gram = scaled.T @ scaled if feature_side else scaled @ scaled.T
        own = _block_grams(scaled, widths)
        ctx.save_for_backward(scaled, gram, *own)
        ctx.feature_side, ctx.widths = feature_side, widths
        return gram.square().sum() - torch.stack([g.square().sum() for g in own]).sum()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        scaled, gram, *own = ctx.saved_tensors
        grad = scaled @ gram if ctx.feature_side else gram @ scaled
        own_grad = [
            block @ block_gram
            for block, block_gram in zip(torch.split(scaled, ctx.widths, dim=1), own, strict=True)
        ]
        grad = grad - torch.cat(own_grad, dim=1)
        return 4.0 * grad_output * grad, None


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
    concatenated = torch.cat(features, dim=1)
    var, mean = torch.var_mean(concatenated, dim=0, correction=0, keepdim=True)
    # Scaling agent i's columns by 1/sqrt(d_i) folds the 1/(d_i·d_j) normalization into the Gram;
    # folding it into the standardization's scale saves a pass over the features.
    column_scale = torch.cat(
        [concatenated.new_full((width,), 1.0 / math.sqrt(width)) for width in widths]
    )
    scaled = (concatenated - mean) * (torch.rsqrt(var + eps) * column_scale)
    cross = _CrossBlockEnergy.apply(scaled, widths)
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


class RedundancyLoss(AuxLoss):
    """Cross-agent redundancy penalty ``coef · Σ_{i<j} ‖corr(Z_i, Z_j)‖_F² / (d_i·d_j)``.

    The sum runs over agent pairs (``pair_reduction: sum``, the default); ``mean`` divides by the
    number of pairs, like the Rust reference. Independent features still score about 1/B per pair.
    Because the gradient grows as 1/σ, a network can lower the penalty by killing feature units: the
    number of near-dead columns (population std below ``dead_threshold``) is reported as
    ``dead_features`` by :meth:`diagnostics`.

    Args:
        coef: the weight λ of the penalty in the total loss.
        eps: added to the variance before the square root.
        pair_reduction: ``sum`` over pairs or ``mean`` over pairs.
        dead_threshold: a feature column whose std is below this counts as near-dead.

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

    def __init__(
        self,
        *,
        coef: float = 0.1,
        eps: float = 1e-5,
        pair_reduction: PairReduction = "sum",
        dead_threshold: float = 1e-3,
    ) -> None:
        super().__init__()
        if pair_reduction not in ("sum", "mean"):
            raise UserError(
                f"redundancy.pair_reduction: got {pair_reduction!r}; choose sum or mean"
            )
        self.coef = coef
        self.eps = eps
        self.pair_reduction: PairReduction = pair_reduction
        self.dead_threshold = dead_threshold

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return redundancy_all_pairs(
            features, coef=self.coef, eps=self.eps, pair_reduction=self.pair_reduction
        )

    @torch.no_grad()
    def diagnostics(self, features: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        std = torch.cat([z.std(dim=0, unbiased=False) for z in features])
        return {"dead_features": (std < self.dead_threshold).sum()}

    def extra_repr(self) -> str:
        return f"coef={self.coef}, eps={self.eps}, pair_reduction={self.pair_reduction!r}"
