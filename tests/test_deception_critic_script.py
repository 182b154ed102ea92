"""scripts/deception_critic.py, quoted in docs/distributed.md: a trained MADDPG run's critics asked
for the value of each of a good agent's moves, split by whether the agent is the closest to the
target."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from marlplug.errors import UserError

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "deception_critic.py"
CONFIG = (
    Path(__file__).resolve().parents[1] / "marlplug" / "configs" / "paper_physical_deception.yaml"
)


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deception_critic", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def test_the_critic_view_covers_every_good_agent_once(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    trained = run_cli(
        "train", str(CONFIG), "--set", "coding=null", "--set", "env.agents=3",
        "--set", "train.num_envs=4", "--set", "train.updates=12", "--set", "train.eval_every=0",
        "--set", "algorithm.learning_starts=16", "--set", "algorithm.minibatch_size=16",
        "--set", f"logging.dir={tmp_path}", "--set", "logging.run_name=run", "--no-progress",
    )  # fmt: skip
    assert trained.exit_code == 0, trained.err
    views = load_script().critic_view(tmp_path / "run", transitions=64)
    closest, others = views["closest good agent"], views["other good agents"]
    assert closest.transitions == 64  # one closest good agent per transition
    assert others.transitions == 64  # two good agents at M = 3
    for view in (closest, others):
        assert view.q_spread >= 0
        assert -1 <= view.critic_toward <= 1 and -1 <= view.actor_toward <= 1
        assert 0 <= view.share_positive <= 1


def test_the_gap_is_toward_minus_away_and_other_runs_are_refused(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    script = load_script()
    values = torch.tensor([[1.0, 5.0], [0.0, 6.0], [3.0, 7.0], [2.0, 8.0]])  # left, right, down, up
    alignment = torch.tensor([[0.0, -1.0], [0.0, 1.0], [-1.0, 0.0], [1.0, 0.0]])  # up; right
    assert script.toward_gap(values, alignment).tolist() == [-1.0, 1.0]
    config = tmp_path / "spread.yaml"
    config.write_text(
        "env: {name: cooperative_navigation, agents: 2, max_steps: 5}\n"
        "train: {updates: 1, rollout_steps: 10, minibatch_size: 10, n_epochs: 1, eval_every: 0}\n"
        f"logging: {{dir: {tmp_path}, run_name: spread, progress: false}}\n"
    )
    assert run_cli("train", str(config)).exit_code == 0
    with pytest.raises(UserError, match="not a MADDPG run of physical_deception"):
        script.critic_view(tmp_path / "spread")
