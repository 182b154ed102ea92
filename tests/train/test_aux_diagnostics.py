"""An aux loss's ``diagnostics()`` reach the run's metrics, named under the loss: one value as
``aux_stats/<loss>/<stat>``, one value per agent also per agent (``agent_0/aux_stats/...``), in a
centralized and a coded run (issue 44: a per-agent diagnostic, as the example plugin's
``feature_rms``, appeared nowhere)."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

import marlplug
from marlplug.losses import AuxLoss
from marlplug.testing import register_plugin
from tests.train.helpers import SMALL_RUN


class FeatureScale(AuxLoss):
    """The example plugin's loss (``marlplug_example_loss.py``): a per-agent diagnostic, plus a
    count as one value."""

    class Options(marlplug.Options):
        coef: float = 1e-3

    def __init__(self, *, coef: float = 1e-3) -> None:
        super().__init__()
        self.coef = coef

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return self.coef * torch.stack([z.square().mean() for z in features]).mean()

    def diagnostics(self, features: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        rms = torch.stack([z.detach().square().mean() for z in features]).sqrt()
        return {"feature_rms": rms, "agents_seen": torch.tensor(len(features))}


@marlplug.hookimpl
def marlplug_losses() -> Mapping[str, Any]:
    return {"feature_scale": FeatureScale}


@pytest.fixture(autouse=True)
def plugin() -> Iterator[None]:
    with register_plugin(SimpleNamespace(marlplug_losses=marlplug_losses), name="test-aux"):
        yield


def _column(path: Path) -> list[float]:
    with path.open(newline="") as handle:
        return [float(row[path.stem]) for row in csv.DictReader(handle)]


@pytest.mark.parametrize(
    "coding", [[], ["coding.scheme=mds", "coding.learners=3", "coding.clock=simulated"]]
)
def test_a_runs_metrics_hold_each_aux_losss_diagnostics(
    run_cli: Callable[..., Any], tmp_path: Path, coding: list[str]
) -> None:
    settings = [*SMALL_RUN, "train.updates=2", "train.eval_every=0", *coding]
    result = run_cli(
        "train",
        *(item for setting in settings for item in ("--set", setting)),
        "--set",
        "losses=[{name: feature_scale}, {name: redundancy}]",
        "--set",
        f"logging.dir={tmp_path}",
        "--set",
        "logging.run_name=run",
    )
    assert result.exit_code == 0, result.err
    scalars = tmp_path / "run" / "metrics" / "scalars"
    per_agent = [_column(scalars / agent / "aux_stats" / "feature_scale" / "feature_rms.csv")
                 for agent in ("agent_0", "agent_1")]  # fmt: skip
    mean = _column(scalars / "mean_aux_stats" / "feature_scale" / "feature_rms.csv")
    assert len(mean) == 2 and all(len(values) == 2 for values in per_agent)
    assert all(value > 0 for values in per_agent for value in values)
    for update in range(2):
        average = (per_agent[0][update] + per_agent[1][update]) / 2
        assert mean[update] == pytest.approx(average, rel=1e-5)
    assert _column(scalars / "aux_stats" / "feature_scale" / "agents_seen.csv") == [2.0, 2.0]
    # A built-in's one-value diagnostic, as before; the loss values themselves beside them.
    assert len(_column(scalars / "aux_stats" / "redundancy" / "dead_features.csv")) == 2
    assert len(_column(scalars / "loss_feature_scale.csv")) == 2
