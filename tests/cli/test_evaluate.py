"""``marlplug evaluate --policy random|scripted``: the report, ``--json``, and one-line errors."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from typing import Any

import pytest


def test_json_has_the_summary_and_every_episode(run_cli: Callable[..., Any]) -> None:
    result = run_cli("evaluate", "--policy", "scripted", "--episodes", "3", "--json")
    assert result.exit_code == 0, result.err
    out = json.loads(result.out)
    assert out["policy"] == "scripted" and out["env"] == "cooperative_navigation"
    assert out["backend"] == "mpe" and out["agents"] == {"agent": 3}
    assert out["episodes"] == 3 and len(out["returns"]) == 3 and out["deterministic"] is True
    assert out["mean"] == pytest.approx(statistics.fmean(out["returns"]))
    assert out["std"] == pytest.approx(statistics.pstdev(out["returns"]))
    assert out["group_returns"]["agent"] == out["returns"]


def test_the_nearest_policy_is_scored_against_random_and_scripted(
    run_cli: Callable[..., Any],
) -> None:
    result = run_cli("evaluate", "--policy", "nearest", "--episodes", "2", "--json")
    assert result.exit_code == 0, result.err
    out = json.loads(result.out)
    references = out["references"]
    assert references["scripted"] > references["random"]
    expected = (out["mean"] - references["random"]) / (
        references["scripted"] - references["random"]
    )
    assert out["score"] == pytest.approx(expected)
    # The two references that define the score are not scored.
    scripted = json.loads(
        run_cli("evaluate", "--policy", "scripted", "--episodes", "1", "--json").out
    )
    assert "score" not in scripted


def test_report_names_what_ran_and_each_group(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        "evaluate", "--policy", "random", "--env", "predator_prey", "--agents", "3",
        "--episodes", "2", "--sample", "--seed", "7",
    )  # fmt: skip
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == (
        "random policy on predator_prey (mpe; agent: 2, adversary: 1): 2 episodes, "
        "sampled actions, evaluation seed 7"
    )
    assert lines[1].startswith("return (summed over agents): ") and " ± " in lines[1]
    assert [line.split(":")[0] for line in lines[2:]] == ["  agent", "  adversary"]


def test_same_seed_same_result(run_cli: Callable[..., Any]) -> None:
    args = ("evaluate", "--policy", "random", "--agents", "2", "--episodes", "2", "--json")
    first, second = run_cli(*args), run_cli(*args)
    assert json.loads(first.out)["returns"] == json.loads(second.out)["returns"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "greedy"], "Invalid value for '--policy': 'greedy' is not one of 'random', "),
        (["--episodes", "0"], "Invalid value for '--episodes'"),
        (
            ["--policy", "random", "--env", "cooperative_navigaton"],
            "env.name: unknown mpe scenario 'cooperative_navigaton' (did you mean "
            "'cooperative_navigation'?)",
        ),
        (["--policy", "random", "--backend", "vmass"], "unknown backend 'vmass'"),
        (
            ["--policy", "scripted", "--env", "keep_away"],
            "--policy scripted: no scripted policy for 'keep_away'; scenarios with one: "
            "cooperative_navigation",
        ),
    ],
)
def test_bad_input_is_one_line(args: list[str], message: str, run_cli: Callable[..., Any]) -> None:
    result = run_cli("evaluate", *args)
    assert result.exit_code == 2
    assert message in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) <= 2
