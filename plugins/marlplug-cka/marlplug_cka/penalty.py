"""The linear-CKA penalty on the similarity of agents' encoder features (loss ``cka``).

Linear CKA(X, Y) = ‖XᵀY‖²_F / (‖XᵀX‖_F · ‖YᵀY‖_F) for column-centered X, Y; it lies in [0, 1] and is
invariant to orthogonal transforms and isotropic scaling of either representation.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from marlplug import Options


class CKAOptions(Options):
    """Options of the ``cka`` loss."""

    coef: float = 0.01
    """Weight of the penalty in the total loss; typical values 0.01–0.1."""
    eps: float = 1e-8
    """Added to the denominator so constant features do not divide by zero."""


class CKAPenalty(nn.Module):
    """``coef`` times the mean linear CKA over all agent pairs i < j.

    All pairs come from one Gram matrix of the concatenated centered features.

    Args:
        coef: weight of the penalty.
        eps: denominator guard.

    Examples:
        >>> penalty = CKAPenalty(coef=1.0)
        >>> z = torch.randn(64, 8)
        >>> round(float(penalty([z, 2 * z])), 4)  # identical up to scale
        1.0
    """

    Options = CKAOptions

    def __init__(self, *, coef: float = 0.01, eps: float = 1e-8) -> None:
        super().__init__()
        self.coef = coef
        self.eps = eps

    def forward(self, features: list[Tensor]) -> Tensor:
        if len(features) < 2:
            return features[0].new_zeros(())
        widths = [f.shape[-1] for f in features]
        stacked = torch.cat(features, dim=-1)
        centered = stacked - stacked.mean(dim=0, keepdim=True)
        gram = centered.T @ centered
        # Sum of squares of every (i, j) block of the Gram matrix: ‖X_iᵀ X_j‖²_F.
        owner = torch.repeat_interleave(
            torch.arange(len(widths), device=stacked.device),
            torch.tensor(widths, device=stacked.device),
        )
        blocks = torch.zeros(len(widths), len(widths), dtype=gram.dtype, device=gram.device)
        blocks.index_put_(
            (owner[:, None].expand_as(gram), owner[None, :].expand_as(gram)),
            gram**2,
            accumulate=True,
        )
        norms = blocks.diagonal().sqrt()
        cka = blocks / (norms[:, None] * norms[None, :] + self.eps)
        rows, cols = torch.triu_indices(len(widths), len(widths), offset=1, device=gram.device)
        return self.coef * cka[rows, cols].mean()
