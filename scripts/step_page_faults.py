"""The M = 32 joint PPO step's time and the page faults it takes, to compare malloc settings.

Each ``[1,000 × 32 × 64]`` activation of the step is 8 MB. glibc's malloc serves blocks that large
with ``mmap`` (or trims them off the heap's top) and hands them back to the system when freed, so
the next step faults its pages in again. Run this once as it is and once with the thresholds
raised, alternating (docs/benchmarks.md, "Page faults"):

    python scripts/step_page_faults.py
    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=68719476736 python scripts/step_page_faults.py

It prints the median step time and the minor page faults per step, e.g. ``61.2 ms, 3177 faults``.
The step is ``marlplug bench loss``'s joint side (ReLU, 1,000 rows, the joint critic).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from marlplug.bench.loss_sides import joint_update, model_and_batch


def minor_faults() -> int:
    """Minor page faults this process has taken so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model, batch = model_and_batch(
        args.agents, rows=1000, hidden=64, critic="joint", activation="relu"
    )
    step = joint_update(model, batch)
    for _ in range(3):  # warm-up: first-touch faults of the parameters and Adam's moments
        step()
    times = []
    faults_before = minor_faults()
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    faults = (minor_faults() - faults_before) / args.steps
    print(f"{statistics.median(times) * 1e3:.1f} ms, {faults:.0f} faults")


if __name__ == "__main__":
    main()
