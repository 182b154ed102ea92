"""End to end: `marlplug codes analyze` and `marlplug bench decode` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from marlplug.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_analyze_json_lists_every_requested_code(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plot = tmp_path / "codes.png"
    status, out, _ = run(
        capsys,
        "codes",
        "analyze",
        "--agents",
        "3",
        "--learners",
        "5",
        "--codes",
        "uncoded,mds,replication",
        "--rounds",
        "100",
        "--json",
        "--plot",
        str(plot),
    )
    assert status == 0
    report = json.loads(out)
    assert [code["name"] for code in report["codes"]] == ["uncoded", "mds", "replication"]
    for code in report["codes"]:
        assert {
            "name",
            "density",
            "tolerance",
            "worst_condition",
            "recovery",
            "expected_round_s",
        } <= set(code)
        assert set(code["recovery"]) == {"0", "1", "2", "3"}
    assert report["codes"][1]["tolerance"] == 2
    assert report["recommended"]["name"] in {"uncoded", "mds", "replication"}
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_analyze_table_names_the_recommendation(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys,
        "codes",
        "analyze",
        "-M",
        "2",
        "-N",
        "4",
        "--codes",
        "mds,uncoded",
        "--rounds",
        "50",
        "--straggle-prob",
        "0.3",
    )
    assert status == 0
    assert "Recommended:" in out and "mds" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-M", "8", "-N", "5"], "learners: must be at least the number of agents (8), got 5"),
        (["-M", "3", "-N", "5", "--codes", "mdss"], "unknown code 'mdss' (did you mean 'mds'?)"),
        (["-M", "3", "-N", "5", "--codes", "ldpc"], "ldpc(construction='auto'"),
        (
            ["-M", "3", "-N", "5", "--straggle-prob", "2"],
            "--straggle-prob: must be between 0 and 1",
        ),
    ],
)
def test_bad_input_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    status, _, err = run(capsys, "codes", "analyze", *args)
    assert status == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_bench_decode_reports_every_method(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "bench", "decode", "--params", "2000", "--repeats", "1", "--json")
    assert status == 0
    report = json.loads(out)
    names = {(m["name"], m["code"]) for m in report["methods"]}
    assert {("least_squares", "mds"), ("peeling", "ldpc"), ("authors_first_subset", "mds")} <= names
    errors = {(m["name"], m["code"]): m["rel_error"] for m in report["methods"]}
    assert errors[("least_squares", "mds")] < 1e-5
    assert (
        errors[("authors_first_subset", "vandermonde")] > 1e-3
    )  # the authors' code loses the parameters
    assert report["worst_condition"]["mds"] <= 1e6 < report["worst_condition"]["vandermonde"]
