"""No silent failure: non-finite losses (and skipped steps) are reported during training and in the
summary, naming the loss and the agents, and `train.max_nonfinite_steps` steps in a row with
non-finite values stop the run with one line."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

import marlplug
from marlplug.errors import ConfigError
from marlplug.losses.aux import AuxLoss
from marlplug.plugins import get_plugin_manager
from marlplug.runs.checkpoint import CHECKPOINT_NAME, load_checkpoint
from tests.train.helpers import SMALL_RUN


class NanLoss(AuxLoss):
    """A broken aux loss: NaN on every ``every``-th call (every call by default). Its gradient is
    finite (the NaN is a constant), so no step is skipped: only the loss value shows it."""

    def __init__(self, *, every: int = 1) -> None:
        super().__init__()
        self.every = every
        self.calls = 0

    class Options(AuxLoss.Options):
        every: int = 1

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        self.calls += 1
        value = sum(z.mean() for z in features) * 0.0
        assert isinstance(value, torch.Tensor)
        return value + float("nan") if self.calls % self.every == 0 else value


class InfiniteGradient(AuxLoss):
    """A finite value (0) whose gradient is not: d/dz sqrt(z - z) at 0 is infinite."""

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return sum(torch.sqrt(z - z.detach()).sum() for z in features) * 1.0  # type: ignore[return-value]


class BrokenLosses:
    @marlplug.hookimpl
    def marlplug_losses(self) -> Mapping[str, Any]:
        return {"nan_aux": NanLoss, "inf_grad": InfiniteGradient}


@pytest.fixture
def broken_losses() -> Iterator[None]:
    manager = get_plugin_manager()
    manager.register(BrokenLosses(), name="broken-losses")
    try:
        yield
    finally:
        manager.unregister("broken-losses")


def _config(tmp_path: Path, loss: dict[str, Any]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"losses": [loss]}))
    return path


def _train(run_cli: Any, config: Path, tmp_path: Path, *overrides: str) -> Any:
    sets = [f"--set={o}" for o in [*SMALL_RUN, f"logging.dir={tmp_path}", "logging.run_name=r"]]
    return run_cli("train", str(config), *sets, *(f"--set={o}" for o in overrides))


def test_a_nan_aux_loss_stops_the_run_with_one_line(
    tmp_path: Path, run_cli: Any, broken_losses: None
) -> None:
    result = _train(
        run_cli,
        _config(tmp_path, {"name": "nan_aux"}),
        tmp_path,
        "train.updates=20",
        "train.max_nonfinite_steps=3",
        "train.checkpoint_every=1",
    )
    assert result.exit_code == 2
    lines = result.err.strip().splitlines()
    # One round per iteration (SMALL_RUN): reported after iterations 1 and 2, stopped in iteration 3.
    assert lines == [
        "warning: iteration 1: 2 of 2 agent steps had non-finite values (0 skipped): "
        "loss_nan_aux (agent_0, agent_1)",
        "warning: iteration 2: 2 of 2 agent steps had non-finite values (0 skipped): "
        "loss_nan_aux (agent_0, agent_1)",
        "error: train.max_nonfinite_steps: agents agent_0, agent_1 had non-finite values 3 steps "
        "in a row (iteration 3, round 1): loss_nan_aux (agent_0, agent_1); the run stopped (fix the "
        "loss, lower train.lr, or raise train.max_nonfinite_steps)",
    ], result.err
    assert (
        load_checkpoint(tmp_path / "r" / CHECKPOINT_NAME)["training"]["counters"]["iterations"] == 2
    )


def test_skipped_steps_are_reported_in_the_summary_when_the_run_goes_on(
    tmp_path: Path, run_cli: Any, broken_losses: None
) -> None:
    # NaN on every other step: never 2 in a row, so the run ends, and says what it skipped.
    result = _train(
        run_cli,
        _config(tmp_path, {"name": "nan_aux", "every": 2}),
        tmp_path,
        "train.updates=4",
        "train.max_nonfinite_steps=2",
    )
    assert result.exit_code == 0, result.err
    assert result.err.strip().splitlines() == [
        f"warning: iteration {n}: 2 of 2 agent steps had non-finite values (0 skipped): "
        f"loss_nan_aux (agent_0, agent_1)"
        for n in (2, 4)
    ]
    assert (
        "warning: 4 of 8 agent steps had non-finite values: loss_nan_aux (agent_0, agent_1)"
        in result.out.splitlines()
    )


def test_a_finite_loss_with_an_infinite_gradient_is_named_as_such(
    tmp_path: Path, run_cli: Any, broken_losses: None
) -> None:
    result = _train(
        run_cli,
        _config(tmp_path, {"name": "inf_grad"}),
        tmp_path,
        "train.updates=3",
        "train.max_nonfinite_steps=null",
    )
    assert result.exit_code == 0, result.err
    assert result.err.strip().splitlines()[0] == (
        "warning: iteration 1: 2 of 2 agent steps had non-finite values (2 skipped): "
        "gradient (agent_0, agent_1)"
    )
    summary = "warning: 6 of 6 agent steps had non-finite values: gradient (agent_0, agent_1)"
    assert summary in result.out.splitlines()


def test_max_nonfinite_steps_is_validated() -> None:
    from marlplug import load_config

    with pytest.raises(ConfigError, match=r"train\.max_nonfinite_steps"):
        load_config(overrides=["train.max_nonfinite_steps=0"])


def test_maddpg_stops_when_its_updates_meet_non_finite_values(tmp_path: Path, run_cli: Any) -> None:
    # An update that meets a non-finite gradient keeps the agent's rows (its state stays finite);
    # train.max_nonfinite_steps such rounds in a row stop the run, as for PPO.
    from marlplug.configs import default_config_path

    coded = default_config_path().with_name("coded_maddpg.yaml")
    sets = [
        "env.agents=2",
        "algorithm.minibatch_size=8",
        "algorithm.learning_starts=8",
        "algorithm.steps_per_iteration=5",
        "algorithm.buffer_size=20",
        "algorithm.hidden_sizes=[8]",
        "algorithm.lr=1e30",  # Adam steps of ~1e30 overflow the next forward pass
        "train.updates=10",
        "train.checkpoint_every=1",
        "train.max_nonfinite_steps=1",
        "coding=null",
        f"logging.dir={tmp_path}",
        "logging.run_name=m",
    ]
    result = run_cli("train", str(coded), "--no-progress", *(f"--set={s}" for s in sets))
    assert result.exit_code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith(
        "error: train.max_nonfinite_steps: agents agent_0, agent_1 had non-finite values 1 step "
        "in a row (iteration "
    ), result.err
    assert "): gradient (agent_0, agent_1); the run stopped" in lines[0], result.err
    # The last checkpoint holds finite states.
    state = load_checkpoint(tmp_path / "m" / CHECKPOINT_NAME)["training"]["theta"]
    assert bool(torch.isfinite(state).all())
