"""``marlplug evaluate RUN_DIR|CHECKPOINT`` on tiny PPO and MADDPG runs: the report, ``--json``,
``--backend``, ``--gif`` and one-line errors for every bad input."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from marlplug import load_config
from marlplug.runs.checkpoint import CHECKPOINT_NAME
from marlplug.train.run import run_training
from tests.train.helpers import SMALL_RUN

#: Episodes per evaluation in these tests (the machinery, not learning).
EPISODES = 3
MADDPG_RUN = [
    "algorithm.name=maddpg",
    "env.agents=2",
    "algorithm.hidden_sizes=[16,16]",
    "algorithm.minibatch_size=8",
    "algorithm.learning_starts=16",
    "algorithm.steps_per_iteration=10",
    "train.updates=3",
    "logging.progress=false",
]


CODED = ["coding.scheme=mds", "coding.learners=3", "coding.clock=simulated"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 2-update PPO run and 3-iteration MADDPG runs (centralized and coded), evaluated at their end
    on EPISODES."""
    root = tmp_path_factory.mktemp("runs")
    folders = {}
    for name, overrides in (
        ("ppo", [*SMALL_RUN, "train.updates=2"]),
        ("maddpg", MADDPG_RUN),
        ("maddpg_coded", [*MADDPG_RUN, *CODED]),
    ):
        config = load_config(
            overrides=[
                *overrides,
                f"logging.dir={root}",
                f"logging.run_name={name}",
                f"train.eval_episodes={EPISODES}",
            ]
        )
        folders[name] = run_training(config).run_dir
    return folders


def _json(run_cli: Callable[..., Any], *args: str) -> dict[str, Any]:
    result = run_cli("evaluate", *args, "--episodes", str(EPISODES), "--json")
    assert result.exit_code == 0, result.err
    return dict(json.loads(result.out))


@pytest.mark.parametrize("algorithm", ["ppo", "maddpg", "maddpg_coded"])
def test_json_fields_and_the_score(
    algorithm: str, runs: dict[str, Path], run_cli: Callable[..., Any]
) -> None:
    out = _json(run_cli, str(runs[algorithm]))
    assert out["algorithm"] == algorithm.removesuffix("_coded") and out["policy"] == str(
        runs[algorithm] / CHECKPOINT_NAME
    )
    assert out["env"] == "cooperative_navigation" and out["backend"] == "mpe"
    assert out["trained_backend"] == "mpe" and out["agents"] == {"agent": 2}
    assert out["updates"] == (2 if algorithm == "ppo" else 3) and out["frames"] > 0
    assert out["episodes"] == EPISODES and len(out["returns"]) == EPISODES
    assert out["deterministic"] is True and out["seed"] == 0
    assert out["mean"] == pytest.approx(statistics.fmean(out["returns"]))
    assert out["std"] == pytest.approx(statistics.pstdev(out["returns"]))
    references = out["references"]
    assert references["scripted"] > references["random"]
    expected = (out["mean"] - references["random"]) / (
        references["scripted"] - references["random"]
    )
    assert out["score"] == pytest.approx(expected)


@pytest.mark.parametrize("algorithm", ["ppo", "maddpg", "maddpg_coded"])
def test_the_run_folder_its_checkpoint_and_the_final_evaluation_agree(
    algorithm: str, runs: dict[str, Path], run_cli: Callable[..., Any]
) -> None:
    folder = _json(run_cli, str(runs[algorithm]))
    checkpoint = _json(run_cli, str(runs[algorithm] / CHECKPOINT_NAME))
    assert folder["returns"] == checkpoint["returns"]
    # train.eval_every's final evaluation ran the same episodes with the same policy.
    with (runs[algorithm] / "metrics" / "scalars" / "eval_return.csv").open() as handle:
        last = handle.read().split()[-1]
    assert float(last.split(",")[1]) == pytest.approx(folder["mean"])


def test_sampled_actions_are_reproducible(
    runs: dict[str, Path], run_cli: Callable[..., Any]
) -> None:
    first = _json(run_cli, str(runs["maddpg"]), "--sample", "--seed", "3")
    second = _json(run_cli, str(runs["maddpg"]), "--sample", "--seed", "3")
    assert first["deterministic"] is False and first["returns"] == second["returns"]


def test_report_names_the_run_and_the_score(
    runs: dict[str, Path], run_cli: Callable[..., Any]
) -> None:
    result = run_cli("evaluate", str(runs["ppo"]), "--episodes", "2")
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith(f"ppo policy of {runs['ppo'] / CHECKPOINT_NAME} (trained on mpe, 2")
    assert lines[0].endswith(
        "on cooperative_navigation (mpe; agent: 2): 2 episodes, deterministic actions, "
        "evaluation seed 0"
    )
    assert lines[1].startswith("return (summed over agents): ")
    assert lines[-1].startswith("oracle-normalized score: ")


def test_another_backend_of_the_same_scenario(
    runs: dict[str, Path], run_cli: Callable[..., Any]
) -> None:
    pytest.importorskip("vmas")
    on_vmas = _json(run_cli, str(runs["ppo"]), "--backend", "vmas")
    assert on_vmas["backend"] == "vmas" and on_vmas["trained_backend"] == "mpe"
    assert len(on_vmas["returns"]) == EPISODES and on_vmas["references"] is not None


def test_gif_of_one_episode(
    runs: dict[str, Path], run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    out = tmp_path / "episode.gif"
    result = run_cli("evaluate", str(runs["maddpg"]), "--episodes", "1", "--gif", str(out))
    assert result.exit_code == 0, result.err
    assert out.stat().st_size > 0 and f"wrote {out}" in result.out


def _bad_inputs(runs: dict[str, Path], tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    no_checkpoint = tmp_path / "stopped"
    no_checkpoint.mkdir()
    (no_checkpoint / "config.yaml").write_text((runs["ppo"] / "config.yaml").read_text())
    junk = tmp_path / "junk.pt"
    junk.write_text("not a checkpoint")
    ppo = str(runs["ppo"])
    return {
        "missing path": (
            [str(tmp_path / "nowhere")],
            f"RUN_DIR|CHECKPOINT: no such run folder or checkpoint file: {tmp_path / 'nowhere'}",
        ),
        "not a run folder": ([str(tmp_path)], f"{tmp_path} is not a run folder"),
        "no checkpoint": (
            [str(no_checkpoint)],
            f"the run folder {no_checkpoint} has no checkpoint.pt yet",
        ),
        "not a checkpoint": ([str(junk)], f"{junk} is not a marlplug checkpoint"),
        "other agent count": (
            [ppo, "--agents", "3"],
            "do not fit this config: trained with 2 agents (agent_0, agent_1), this config builds 3",
        ),
        "other scenario": ([ppo, "--env", "keep_away"], "do not fit this config"),
        "other scenario, maddpg": ([str(runs["maddpg"]), "--env", "predator_prey"], "do not fit"),
        "unknown backend": ([ppo, "--backend", "vmass"], "unknown backend 'vmass'"),
        "neither": ([], "give a run folder or checkpoint (RUN_DIR|CHECKPOINT) or --policy"),
        "both": ([ppo, "--policy", "random"], "not both"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing path",
        "not a run folder",
        "no checkpoint",
        "not a checkpoint",
        "other agent count",
        "other scenario",
        "other scenario, maddpg",
        "unknown backend",
        "neither",
        "both",
    ],
)
def test_bad_input_is_one_line(
    case: str, runs: dict[str, Path], run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    args, message = _bad_inputs(runs, tmp_path)[case]
    result = run_cli("evaluate", *args, "--episodes", "1")
    assert result.exit_code == 2, (result.out, result.err)
    assert message in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) <= 2, result.err


def test_one_group_at_random_against_the_others_trained(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    keep_away = [*MADDPG_RUN, "env.name=keep_away", "env.adversaries=1"]
    overrides = [*keep_away, f"logging.dir={tmp_path}", "logging.run_name=ka"]
    run = str(run_training(load_config(overrides=overrides)).run_dir)
    trained = _json(run_cli, run)
    adversary_random = _json(run_cli, run, "--random-group", "adversary")
    assert adversary_random["random_group"] == "adversary" and "random_group" not in trained
    # The adversary's moves are drawn: the same episodes end differently for both sides.
    assert adversary_random["group_returns"] != trained["group_returns"]
    out = tmp_path / "episode.gif"
    result = run_cli(
        "evaluate", run, "--random-group", "agent", "--episodes", "1", "--gif", str(out)
    )  # fmt: skip
    assert result.exit_code == 0, result.err
    assert "'agent' acting at random" in result.out.splitlines()[0]
    assert out.stat().st_size > 0
    result = run_cli("evaluate", run, "--random-group", "prey", "--episodes", "1")
    assert result.exit_code == 2 and "Traceback" not in result.err
    assert "--random-group: 'prey' is not a group of this env; choose one of: agent, adversary" in (
        result.err
    )
