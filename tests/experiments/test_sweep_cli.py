"""`marlplug sweep` and `marlplug compare` end to end, with tiny budgets on the mpe default."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from marlplug.experiments.results import load_results

TINY = [
    "--set", "train.updates=2",
    "--set", "train.rollout_steps=50",
    "--set", "train.minibatch_size=50",
    "--set", "train.n_epochs=1",
    "--set", "train.eval_every=1",
    "--set", "train.eval_episodes=2",
    "--episodes", "3",
]  # fmt: skip


def marlplug(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=900,
    )


@pytest.mark.slow
def test_sweep_then_compare(tmp_path: Path) -> None:
    grid = ["--grid", "train.lr=0.001,0.01"]
    sweep = marlplug("sweep", "--seeds", "0-1", "--jobs", "2", *grid, *TINY, cwd=tmp_path)
    assert sweep.returncode == 0, sweep.stderr
    results_path = tmp_path / "sweeps" / "default" / "results.json"
    assert f"compare: marlplug compare {results_path.relative_to(tmp_path)}" in sweep.stdout
    results = load_results(results_path)
    assert results.configurations == ["train.lr=0.001", "train.lr=0.01"]
    assert sorted((r.configuration, r.seed) for r in results.runs) == [
        ("train.lr=0.001", 0),
        ("train.lr=0.001", 1),
        ("train.lr=0.01", 0),
        ("train.lr=0.01", 1),
    ]
    for run in results.runs:
        assert run.evaluation.episodes == 3 and run.evaluation.backend == "mpe"
        assert run.evaluation.score is not None and run.cpu
        assert [point.update for point in run.curve] == [1, 2]
        assert (results_path.parent / run.run_dir / "checkpoint.pt").is_file()
        assert not run.resumed
    # The same seed gives the same run whatever runs beside it.
    by_key = {(r.configuration, r.seed): r.evaluation.mean for r in results.runs}
    assert by_key[("train.lr=0.001", 0)] != by_key[("train.lr=0.01", 0)]

    again = marlplug("sweep", "--seeds", "0-1", "--jobs", "2", *grid, *TINY, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "4 of 4 runs already done" in again.stdout
    assert load_results(results_path) == results

    other = marlplug("sweep", "--seeds", "0", *TINY, "--out", "sweeps/default", cwd=tmp_path)
    assert other.returncode == 2
    assert other.stderr.startswith("error: --out: sweeps/default holds the results of another")

    compare = marlplug("compare", str(results_path), "--json", "--reps", "200", cwd=tmp_path)
    assert compare.returncode == 0, compare.stderr
    report = json.loads(compare.stdout)
    assert report["metric"] == "score" and report["baseline"] == "train.lr=0.001"
    assert set(report["aggregates"]) == {"train.lr=0.001", "train.lr=0.01"}
    assert set(report["improvement"]) == {"train.lr=0.01"}
    assert Path(tmp_path / report["figure"]).stat().st_size > 10_000

    text = marlplug("compare", str(results_path), "--metric", "return", "--no-plot", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "final return per configuration" in text.stdout
    assert "probability of improvement over 'train.lr=0.001'" in text.stdout
    assert "figure:" not in text.stdout


@pytest.mark.slow
def test_an_interrupted_sweep_resumes_its_runs(tmp_path: Path) -> None:
    args = [
        "sweep", "--seeds", "0", "--name", "long", *TINY,
        "--set", "train.updates=40", "--set", "train.checkpoint_every=1",
    ]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "marlplug.cli.main", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    checkpoint = tmp_path / "sweeps" / "long" / "runs" / "long" / "seed-0" / "checkpoint.pt"
    deadline = time.monotonic() + 600
    while not checkpoint.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert process.poll() is None, "the run ended before it could be interrupted"
    os.kill(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 130, stderr
    assert "sweep interrupted: 0 of 1 runs done" in stderr
    assert "Traceback" not in stderr
    assert checkpoint.is_file()

    resumed = marlplug(*args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    log = (tmp_path / "sweeps" / "long" / "logs" / "long-seed-0.log").read_text()
    assert "$ marlplug train --resume" in log
    (run,) = load_results(tmp_path / "sweeps" / "long" / "results.json").runs
    assert run.updates == 40 and run.resumed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sweep", "--seeds", "two"], "error: --seeds: 'two' is not a seed list"),
        (["sweep", "--grid", "train.lr"], "error: --grid 'train.lr': expected KEY=V1,V2"),
        (["sweep", "--grid", "train.lrr=1,2"], "error: train.lrr: unknown field"),
        (["sweep", "--set", "train.updates=0"], "error: train.updates: input should be"),
        (["compare", "missing.json"], "error: RESULTS: no such file: missing.json"),
        (["sweep", "--eval-backend", "mpee"], "error: --eval-backend: unknown backend 'mpee'"),
        (["sweep", "--set", "train.eval_backend=vmass"], "error: train.eval_backend: unknown"),
    ],
)
def test_bad_input_is_one_line_and_status_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = marlplug(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(message), result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2
    assert not (tmp_path / "sweeps").exists()


def test_compare_refuses_a_file_that_is_not_a_sweeps(tmp_path: Path) -> None:
    (tmp_path / "other.json").write_text('{"format": "marlplug-sweep/1", "runs": []}')
    result = marlplug("compare", "other.json", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: RESULTS: other.json is not a results file of")
