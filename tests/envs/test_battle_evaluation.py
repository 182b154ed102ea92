"""Evaluating where agents die (MAgent2 battle, issue 45): every episode's survivors per army and
the win rates ``marlplug evaluate`` reports; one army acting as another checkpoint's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase

from marlplug.config import load_config
from marlplug.envs import make_env
from marlplug.envs.evaluate import evaluate
from marlplug.envs.policies import opponent_group_policy
from marlplug.train.run import run_training
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

pytest.importorskip("magent2")

EPISODE = 40
#: magent2 battle's actions on a 16x16 map: red closes in on a standing blue army (8: two cells
#: right, 7: one cell right) and hits the cell to its right (17); 6 stays.
RED_PLAN = (8, 8, 8, 7)
RED_ATTACK, STAY = 17, 6


def _env() -> EnvBase:
    return make_env("battle", backend="pettingzoo", map_size=16, max_steps=EPISODE, seed=0)


def _red_attacks(env: EnvBase) -> Callable[[TensorDictBase], TensorDictBase]:
    clock = iter(range(10**6))

    def act(td: TensorDictBase) -> TensorDictBase:
        step = next(clock) % EPISODE
        red = RED_PLAN[step] if step < len(RED_PLAN) else RED_ATTACK
        td.set(("red", "action"), torch.full((6,), red))
        td.set(("blue", "action"), torch.full((6,), STAY))
        return td

    return act


def test_survivors_and_wins_where_one_army_attacks_a_standing_one() -> None:
    env = _env()
    result = evaluate(env, _red_attacks(env), episodes=2, seed=0)
    survivors = result.group_survivors
    assert survivors["red"] == [6, 6]
    assert all(0 <= count < 6 for count in survivors["blue"]), survivors
    assert result.win_rates == {"red": 1.0, "blue": 0.0}
    assert result.as_dict()["win_rates"] == {"red": 1.0, "blue": 0.0}
    # An env whose agents never die counts no survivors and reports no wins.
    spread = make_env("cooperative_navigation", agents=2, seed=0)
    plain = evaluate(spread, lambda td: td.update(spread.full_action_spec.zero()), episodes=1)
    assert plain.group_survivors == {} and "win_rates" not in plain.as_dict()


def test_one_army_acts_as_another_policy() -> None:
    env = _env()
    attacks = _red_attacks(env)

    def stay(td: TensorDictBase) -> TensorDictBase:
        return td.update(env.full_action_spec.zero().apply(lambda action: action + STAY))

    # Blue taken from the attacking plan (it stays), red from a policy that only stays: nobody dies.
    mixed = evaluate(env, opponent_group_policy(stay, attacks, env, "blue"), episodes=1)
    assert mixed.group_survivors == {"red": [6], "blue": [6]}
    assert mixed.win_rates == {"red": 0.0, "blue": 0.0}


def test_marlplug_evaluate_reports_wins_against_random_and_an_earlier_checkpoint(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    config = load_config(
        data={
            "env": {"backend": "pettingzoo", "name": "battle", "map_size": 16, "max_steps": 20},
            "algorithm": {"name": "ppo", "hidden_size": 8, "feature_dim": 8, "critic": "local"},
            "train": {
                "updates": 2,
                "rollout_steps": 20,
                "minibatch_size": 20,
                "n_epochs": 1,
                "keep_checkpoint_every": 1,
            },
            "logging": {"dir": str(tmp_path), "run_name": "battle", "progress": False},
        }
    )
    run_dir = run_training(config).run_dir
    args = ["evaluate", str(run_dir), "--episodes", "2"]
    text = run_cli(*args, "--random-group", "blue")
    assert text.exit_code == 0, text.err
    assert "wins (more agents alive at the end than the other groups): red" in text.out
    # Blue as it was after update 1: the kept checkpoint (train.keep_checkpoint_every).
    earlier = run_dir / "checkpoints" / "update-000001.pt"
    out = run_cli(*args, "--opponent", str(earlier), "--opponent-group", "blue", "--json")
    assert out.exit_code == 0, out.err
    report = json.loads(out.out)
    assert report["opponent_group"] == "blue" and set(report["win_rates"]) == {"red", "blue"}
    assert report["opponent"] == str(earlier) and report["opponent_updates"] == 1
    assert all(len(counts) == 2 for counts in report["group_survivors"].values())
    alone = run_cli(*args, "--opponent", str(run_dir))
    assert alone.exit_code == 2 and "--opponent and --opponent-group go together" in alone.err


def test_the_packaged_battle_config_fields_64_agents_a_side() -> None:
    config = load_config(Path(__file__).parents[2] / "marlplug/configs/battle_64v64.yaml")
    assert config.env.options.agents == 128  # magent2 sizes both armies from map_size
    assert config.algorithm.share_params and config.algorithm.critic == "local"
