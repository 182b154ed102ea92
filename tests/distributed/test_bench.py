"""``marlplug bench coding``: JSON rows, the comparison with the paper, the bar chart."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from marlplug.bench.coded_rounds import measure_wall, round_work
from marlplug.bench.coded_setting import Setting, warmed_up
from marlplug.bench.paper import check_targets, read_reference, shape_summary
from marlplug.coding import RandomSparseCode
from marlplug.distributed.learner import learner_compute, state_rows
from marlplug.errors import UserError

#: The columns that show where coding stops paying (see marlplug.bench.coded_rounds).
COST_COLUMNS = ("decode_s", "compute_s", "compute_per_agent_s", "round_over_uncoded_k0")


def _bench_coding(
    run_cli: Callable[..., object], *, agents: int, learners: int, minibatch: int, extra: list[str]
) -> object:
    """``marlplug bench coding`` on cooperative navigation, one round per setting."""
    return run_cli(
        "bench",
        "coding",
        *("--scenario", "cooperative_navigation", "--agents", str(agents)),
        *("--learners", str(learners), "--rounds", "1", "--minibatch-size", str(minibatch)),
        *extra,
    )


def test_bench_coding_json_rows(run_cli: Callable[..., object], tmp_path: Path) -> None:
    plot = tmp_path / "bars.png"
    result = _bench_coding(
        run_cli,
        agents=3,
        learners=5,
        minibatch=64,
        extra=["--code", "uncoded", "--code", "mds", "--plot", str(plot), "--json"],
    )
    assert result.exit_code == 0, result.err  # type: ignore[attr-defined]
    rows = json.loads(result.out)  # type: ignore[attr-defined]
    assert {(r["code"], r["stragglers"]) for r in rows} == {
        (c, k) for c in ("uncoded", "mds") for k in (0, 1, 2)
    }
    for row in rows:
        assert {"scenario", "agents", "stragglers", "code", "round_s"} <= set(row)
        assert row["round_s"] >= row["update_s"] > 0
    by_key = {(r["code"], r["stragglers"]): r for r in rows}
    # Uncoded has to wait for its straggler on the virtual clock; mds (k <= N - M) never does.
    assert by_key["uncoded", 1]["update_s"] >= 0.25
    assert by_key["mds", 2]["update_s"] < 0.25
    assert plot.stat().st_size > 1000


def test_bench_coding_costs_at_a_small_size_take_the_path_of_m32_n48(
    run_cli: Callable[..., object],
) -> None:
    # M/N as at M=32, N=48 would be N=6; ldpc has no code at M=4, N=6, so N=8 keeps all five codes.
    result = _bench_coding(run_cli, agents=4, learners=8, minibatch=32, extra=["--json"])
    assert result.exit_code == 0, result.err  # type: ignore[attr-defined]
    rows = json.loads(result.out)  # type: ignore[attr-defined]
    assert {(r["code"], r["stragglers"]) for r in rows} == {
        (c, k)
        for c in ("uncoded", "mds", "random_sparse", "replication", "ldpc")
        for k in (0, 1, 2)
    }
    for row in rows:
        for column in COST_COLUMNS:
            assert math.isfinite(row[column]) and row[column] >= 0, (row["code"], column)
        assert row["decode_s"] > 0 and row["compute_per_agent_s"] > 0
        assert row["update_s"] >= row["decode_s"]
    by_key = {(r["code"], r["stragglers"]): r for r in rows}
    assert by_key["uncoded", 0]["round_over_uncoded_k0"] == 1.0
    assert by_key["uncoded", 1]["round_over_uncoded_k0"] > 1.0  # it waits for its straggler
    assert {c: by_key[c, 0]["agents_per_learner"] for c in ("uncoded", "mds", "replication")} == {
        "uncoded": 1,
        "mds": 4,
        "replication": 1,
    }


def test_the_uncoded_baseline_is_measured_when_only_other_codes_run(
    run_cli: Callable[..., object],
) -> None:
    result = _bench_coding(run_cli, agents=3, learners=5, minibatch=32, extra=["--code", "mds"])
    assert result.exit_code == 0, result.err  # type: ignore[attr-defined]
    lines = result.out.splitlines()  # type: ignore[attr-defined]
    header = next(line for line in lines if "x uncoded k=0" in line)
    assert "decode s" in header and "compute s/agent" in header
    cost_rows = [line for line in lines if line.startswith("| cooperative_navigation | 3 | 5 |")]
    # Only mds is shown, at k = 0, 1, 2; the uncoded round it is set against ran unseen.
    assert [line.split("|")[5].strip() for line in cost_rows] == ["mds"] * 3
    assert all(float(line.split("|")[8]) > 0 for line in cost_rows)


def test_one_call_for_every_agent_gives_each_learner_its_answer() -> None:
    warm = warmed_up(
        Setting("cooperative_navigation", 3, (0,), 0.25, 0),
        "mpe",
        0,
        {"minibatch_size": 16, "learning_starts": 16},
    )
    batch = warm.collector.sample(torch.Generator().manual_seed(0))
    state = state_rows(warm.theta, warm.opt_state)
    work = round_work(warm.program, state, batch, seed=5, one_agent=1)
    assert work.one_agent_s > 0 and work.all_agents_s > 0
    assert work.compute_s(1) == work.one_agent_s and work.compute_s(3) == work.all_agents_s
    for row in RandomSparseCode(p_m=0.6).assignment_matrix(3, 5, seed=0):
        answer = learner_compute(warm.program, row, state, batch, seed=5)
        assert torch.equal(work.coded(row), answer.coded)
    assert np.isfinite(work.ordinals.numpy()).all()


def test_a_timed_round_is_one_iteration_of_one_update() -> None:
    # An iteration of k > 1 updates would take its env steps once for k rounds, not every round.
    with pytest.raises(UserError, match="updates_per_iteration=3"):
        warmed_up(
            Setting("cooperative_navigation", 2, (0,), 0.25, 0),
            "mpe",
            0,
            {"minibatch_size": 16, "learning_starts": 16, "updates_per_iteration": 3},
        )


@pytest.mark.slow  # starts 2 x 3 learner processes
def test_the_wall_clock_reports_the_same_costs() -> None:
    rows = measure_wall(
        Setting("cooperative_navigation", 2, (0,), 0.25, 0),
        codes=["mds"],
        learners=3,
        rounds=1,
        env_backend="mpe",
        seed=0,
        algorithm_options={"minibatch_size": 16, "learning_starts": 16},
    )
    assert [(r["code"], r["stragglers"], r["clock"]) for r in rows] == [("mds", 0, "wall")]
    for column in COST_COLUMNS:
        assert math.isfinite(rows[0][column]) and rows[0][column] > 0, column
    assert rows[0]["agents_per_learner"] == 2


def test_bad_agent_count_is_a_one_line_error(run_cli: Callable[..., object]) -> None:
    result = run_cli("bench", "coding", "--agents", "20", "--learners", "15")
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "--agents" in result.err  # type: ignore[attr-defined]


def test_shape_summary_and_targets_read_the_paper_table() -> None:
    paper = read_reference()  # the table shipped in the package
    assert len(paper) == 120
    mine = [
        {
            "scenario": r["scenario"],
            "agents": r["agents"],
            "stragglers": r["stragglers"],
            "code": r["code"],
            "round_s": r["time_s"],
            "update_s": r["time_s"],
            "delay_s": 0.25,
        }
        for r in paper
        if r["scenario"] == "cooperative_navigation" and r["agents"] == 8
    ]
    summary = shape_summary(mine, paper)
    assert [s["paper_fastest"] for s in summary] == [s["ours_fastest"] for s in summary]
    assert summary[0]["paper_mds_over_uncoded_k0"] == mine[1]["round_s"] / mine[0]["round_s"]
    lines = check_targets(mine, learners=15)
    assert lines[0].startswith("MISSED") and "k=0" in lines[0]  # the paper's 1.34x misses 1.3x


def test_the_reference_table_is_read_from_the_package_wherever_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no docs/ folder here
    assert len(read_reference()) == 120
    mine = tmp_path / "mine.csv"
    mine.write_text("scenario,agents,learners,stragglers,code,time_s\nkeep_away,8,15,0,mds,2.5\n")
    assert read_reference(mine) == [
        {
            "scenario": "keep_away",
            "agents": 8,
            "learners": "15",
            "stragglers": 0,
            "code": "mds",
            "time_s": 2.5,
        }
    ]
