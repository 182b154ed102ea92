"""Example marlplug aux-loss plugin: keep every agent's encoder features at a bounded scale."""

from collections.abc import Mapping
from typing import Any

import torch
from pydantic import Field

import marlplug
from marlplug.losses import AuxLoss


class FeatureScalePenalty(AuxLoss):
    """``coef`` times the mean over agents of ``mean(Z_i²)``: an activity regularizer that stops
    encoder features from growing without bound (it pairs well with ``redundancy``, whose
    gradient grows as features shrink).

    Args:
        coef: weight of the penalty in the total loss; typical values 1e-4 to 1e-2.
    """

    class Options(marlplug.Options):
        coef: float = Field(1e-3, ge=0.0, description="Weight of the penalty in the total loss.")

    def __init__(self, *, coef: float = 1e-3) -> None:
        super().__init__()
        self.coef = coef

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        per_agent = torch.stack([z.square().mean() for z in features])
        return self.coef * per_agent.mean()

    def diagnostics(self, features: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        return {"feature_rms": torch.stack([z.detach().square().mean() for z in features]).sqrt()}


@marlplug.hookimpl
def marlplug_losses() -> Mapping[str, Any]:
    return {"feature_scale": FeatureScalePenalty}
