"""``marlplug bench load`` on a tiny budget: real runs idle and beside real loads, one row per
threads setting and load, ratios consistent with the frames/s; bad input in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from marlplug.bench.load import format_table
from marlplug.train.threads import usable_cpus

#: Every run a few seconds: 8 copies, 2 updates.
TINY = ["--set", "train.num_envs=8", "--set", "train.minibatch_size=100", "--updates", "2"]


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    unset = ("RL_LOGGING_LEVEL", "OMP_WAIT_POLICY")
    environment = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", "bench", "load", *args],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=600,
    )


@pytest.mark.skipif(len(usable_cpus()) < 2, reason="the load takes one of 2+ CPUs")
def test_bench_load_measures_every_setting_idle_and_beside_each_load() -> None:
    result = _bench(
        "marlplug/configs/spread_vmas.yaml",
        *("--json", "--repeats", "1", "--threads", "auto", "--threads", "1"),
        *("--load", "memory", *TINY),
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [(row["threads"], row["load"]) for row in out["rows"]] == [
        (threads, load) for threads in ("auto", "1") for load in ("idle", "memory")
    ]
    rows = {(row["threads"], row["load"]): row for row in out["rows"]}
    for (threads, load), row in rows.items():
        assert row["fps"] > 0 and row["fps_samples"] == [row["fps"]]
        idle = rows[(threads, "idle")]["fps"]
        assert row["vs_idle"] == pytest.approx(row["fps"] / idle, abs=1e-3)
        assert row["vs_one_thread"] == pytest.approx(
            row["fps"] / rows[("1", load)]["fps"], abs=1e-3
        )
    assert "spread_vmas.yaml" in format_table(out) and out["cpu"]
    assert out["omp_wait_policy"] is None  # OpenMP's own default: marlplug leaves it


def test_a_bad_setting_is_one_line_from_the_run() -> None:
    result = _bench(
        "marlplug/configs/spread_vmas.yaml", "--threads", "many", "--repeats", "1", *TINY
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: bench load: marlplug train")
    assert "must be auto, a whole number" in result.stderr


@pytest.mark.skipif(len(usable_cpus()) < 2, reason="the load takes one of 2+ CPUs")
def test_a_replay_run_with_no_update_yet_gives_no_update_ratio() -> None:
    # 2 iterations of 10 env steps, before learning_starts (1,000): no update time to divide by.
    config = "marlplug/configs/lbf_10x10_3p_3f_vdn.yaml"
    result = _bench(config, "--json", "--repeats", "1", "--threads", "1", "--updates", "2")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [row["update_vs_idle"] for row in out["rows"]] == [None, None]
    assert all(row["collect_vs_idle"] > 0 for row in out["rows"])
    assert format_table(out).splitlines()[-1].endswith(" -")
