"""The built-in ``redundancy`` loss passes the aux-loss contract plugin authors run (where agents
die too), and the contract catches losses that break it."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
import torch

from marlplug.losses import AuxLoss, RedundancyLoss
from marlplug.testing import AuxLossContract, check_aux_loss
from marlplug.testing.losses import build_loss, check_dead_rows


class TestRedundancy(AuxLossContract):
    loss_class = RedundancyLoss
    registered_name = "redundancy"
    dead_agents = True


class TestRedundancyMeanOverPairs(AuxLossContract):
    loss_class = RedundancyLoss
    options: ClassVar[dict[str, Any]] = {"coef": 0.5, "pair_reduction": "mean"}
    dead_agents = True


def test_redundancy_on_sampled_rows_ignores_dead_rows() -> None:
    # sample_rows draws from torch's global RNG: check_dead_rows seeds each call alike.
    loss = build_loss(RedundancyLoss, {"sample_rows": 16})
    for widths in [(3, 5, 4), (6, 6)]:
        check_dead_rows(loss, widths)


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


def _mean_squares(features: list[torch.Tensor], alive: list[torch.Tensor]) -> torch.Tensor:
    """Each agent's mean row energy on its alive rows (0 for an agent alive on none)."""
    return torch.stack(
        [
            z[rows].square().sum() / rows.sum().clamp(min=1)
            for z, rows in zip(features, alive, strict=True)
        ]
    )


class TakesNoAlive(AuxLoss):
    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack([z.square().mean() for z in features]).sum()


class ReadsDeadRows(AuxLoss):
    def forward(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        return torch.stack([z.square().mean() for z in features]).sum()


class GradientThroughDeadRows(AuxLoss):
    def forward(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        if alive is None:
            return torch.stack([z.square().mean() for z in features]).sum()
        # z - z.detach() is exactly 0, so the value is right, but every row gets a gradient.
        leak = torch.stack([(z - z.detach()).sum() for z in features]).sum()
        return _mean_squares(features, alive).sum() + leak


class DiagnosticsReadDeadRows(ReadsDeadRows):
    def forward(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        if alive is None:
            return super().forward(features)
        return _mean_squares(features, alive).sum()

    def diagnostics(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        return {"feature_max": torch.stack([z.detach().abs().max() for z in features])}


class AliveMeansSomethingElse(DiagnosticsReadDeadRows):
    def forward(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        value = super().forward(features, alive)
        return value if alive is None else 2.0 * value

    def diagnostics(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        return {}


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (TakesNoAlive, "takes no alive="),
        (ReadsDeadRows, "overwriting the dead rows changed the value"),
        (GradientThroughDeadRows, "agent 0's dead rows get a gradient"),
        (DiagnosticsReadDeadRows, r"changed diagnostics\(\)\['feature_max'\]"),
        (AliveMeansSomethingElse, "with every row alive"),
    ],
)
def test_the_dead_agents_check_catches(broken: type[AuxLoss], message: str) -> None:
    check_aux_loss(broken)  # without deaths each is a correct loss: the check is opt-in
    with pytest.raises(AssertionError, match=message):
        check_aux_loss(broken, dead_agents=True)


class TestWithoutDeaths(AuxLossContract):
    """A loss without ``alive`` (right wherever no agent dies) passes the suite as it did."""

    loss_class = TakesNoAlive

    def test_dead_rows_are_not_checked(self) -> None:
        with pytest.raises(pytest.skip.Exception, match="dead_agents not set"):
            self.test_dead_rows_change_nothing()


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
