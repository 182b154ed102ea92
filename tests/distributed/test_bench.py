"""``marlplug bench coding``: JSON rows, the comparison with the paper, the bar chart."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from marlplug.bench.paper import check_targets, read_reference, shape_summary


def test_bench_coding_json_rows(run_cli: Callable[..., object], tmp_path: Path) -> None:
    plot = tmp_path / "bars.png"
    result = run_cli(
        "bench",
        "coding",
        "--scenario",
        "cooperative_navigation",
        "--agents",
        "3",
        "--learners",
        "5",
        "--rounds",
        "1",
        "--minibatch-size",
        "64",
        "--code",
        "uncoded",
        "--code",
        "mds",
        "--plot",
        str(plot),
        "--json",
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
