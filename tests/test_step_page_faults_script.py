"""scripts/step_page_faults.py, quoted in docs/benchmarks.md: with glibc's mmap and trim thresholds
raised, the M = 32 joint step stops faulting its 8 MB activations in again every step."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "step_page_faults.py"
RAISED = {"MALLOC_MMAP_THRESHOLD_": "4294967296", "MALLOC_TRIM_THRESHOLD_": "68719476736"}


def faults_per_step(**env: str) -> float:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--threads", "1", "--steps", "10"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    match = re.fullmatch(r"[0-9.]+ ms, ([0-9]+) faults\n", result.stdout)
    assert match, result.stdout
    return float(match.group(1))


def test_raised_malloc_thresholds_take_far_fewer_page_faults() -> None:
    assert faults_per_step(**RAISED) < faults_per_step() / 4
