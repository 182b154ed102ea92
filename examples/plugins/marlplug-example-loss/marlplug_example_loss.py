"""Example marlplug aux-loss plugin: keep every agent's encoder features at a bounded scale."""

from collections.abc import Mapping
from typing import Any

import torch
from pydantic import Field

import marlplug
from marlplug.losses import AuxLoss


def mean_squares(
    features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
) -> torch.Tensor:
    """Each agent's ``mean(Z_i²)``: ``[M]``, over its alive rows where ``alive`` is given (an
    agent alive on no row scores 0), so what the env wrote for a dead agent counts for nothing."""
    if alive is None:
        return torch.stack([z.square().mean() for z in features])
    return torch.stack(
        [
            z[rows].square().sum() / (rows.sum() * z.shape[1]).clamp(min=1)
            for z, rows in zip(features, alive, strict=True)
        ]
    )


class FeatureScalePenalty(AuxLoss):
    """``coef`` times the mean over agents of ``mean(Z_i²)``: an activity regularizer that stops
    encoder features from growing without bound (it pairs well with ``redundancy``, whose
    gradient grows as features shrink). Where agents die, each agent's mean runs over its
    alive rows.

    Args:
        coef: weight of the penalty in the total loss; typical values 1e-4 to 1e-2.
    """

    class Options(marlplug.Options):
        coef: float = Field(1e-3, ge=0.0, description="Weight of the penalty in the total loss.")

    def __init__(self, *, coef: float = 1e-3) -> None:
        super().__init__()
        self.coef = coef

    def forward(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        return self.coef * mean_squares(features, alive).mean()

    def diagnostics(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        return {"feature_rms": mean_squares([z.detach() for z in features], alive).sqrt()}


@marlplug.hookimpl
def marlplug_losses() -> Mapping[str, Any]:
    return {"feature_scale": FeatureScalePenalty}
