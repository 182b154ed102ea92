"""The built-in ``redundancy`` loss passes the aux-loss contract plugin authors run, and the contract
catches losses that break it."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
import torch

from marlplug.losses import AuxLoss, RedundancyLoss
from marlplug.testing import AuxLossContract, check_aux_loss


class TestRedundancy(AuxLossContract):
    loss_class = RedundancyLoss
    registered_name = "redundancy"


class TestRedundancyMeanOverPairs(AuxLossContract):
    loss_class = RedundancyLoss
    options: ClassVar[dict[str, Any]] = {"coef": 0.5, "pair_reduction": "mean"}


class SkipsLastAgent(AuxLoss):
    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return sum((z.square().mean() for z in features[:-1]), torch.zeros(()))


class PerAgentValues(AuxLoss):
    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack([z.mean() for z in features])


class NormalizesWithoutEps(AuxLoss):
    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return sum((((z - z.mean(0)) / z.std(0)).mean() for z in features), torch.zeros(()))


class InPlace(AuxLoss):
    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            features[0].mul_(2.0)
        return sum((z.mean() for z in features), torch.zeros(()))


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (SkipsLastAgent, "no gradient reaches agent 2"),
        (PerAgentValues, "not a scalar"),
        (NormalizesWithoutEps, "constant feature column"),
        (InPlace, "modified its input in place"),
    ],
)
def test_the_contract_catches(broken: type[AuxLoss], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_aux_loss(broken)


def test_options_that_accept_unknown_fields_are_caught() -> None:
    from pydantic import BaseModel

    class LooseOptions(BaseModel):  # not marlplug.Options: extra fields pass silently
        coef: float = 1.0

    class Loose(AuxLoss):
        Options = LooseOptions  # type: ignore[assignment]

        def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
            return torch.zeros(())

    with pytest.raises(AssertionError, match=r"must subclass marlplug\.Options"):
        check_aux_loss(Loose)
