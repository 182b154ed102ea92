"""examples/torchrl_mappo.py runs as a script, at its small sizes, on VMAS and on PettingZoo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("env", ["vmas", "pettingzoo"])
def test_the_example_trains_with_the_redundancy_penalty(env: str) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "torchrl_mappo.py"), "--small", "--env", env],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("iteration")]
    assert len(lines) == 2, result.stdout
    for line in lines:
        redundancy = float(line.rsplit("redundancy ", 1)[1])
        assert 0.0 < redundancy < 10.0  # the penalty is computed and finite
        assert "nan" not in line.split("episode reward")[1].split(",", 1)[1]
