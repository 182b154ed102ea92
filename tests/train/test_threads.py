"""``train.torch_threads: auto``: the CPUs other processes leave free, a sweep's share, and a result
that does not depend on the thread count (what makes ``auto`` safe for reproducibility)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from marlplug.config import load_config
from marlplug.errors import UserError
from marlplug.train.run import run_training
from marlplug.train.threads import CPU_SHARE_ENV, AutoThreads, cpu_share, usable_cpus

CPUS = usable_cpus()


@pytest.fixture
def busy_core() -> Iterator[int]:
    """A Python busy loop pinned to the last usable CPU, as a neighbour's job would be."""
    cpu = CPUS[-1]
    loop = (
        f"import os; os.sched_setaffinity(0, {{{cpu}}})\n"
        "import time; end = time.monotonic() + 60\n"
        "while time.monotonic() < end: pass"
    )
    process = subprocess.Popen([sys.executable, "-c", loop])
    try:
        yield cpu
    finally:
        process.kill()
        process.wait()


@pytest.mark.skipif(len(CPUS) < 2 or not Path("/proc/stat").exists(), reason="needs 2 CPUs")
def test_auto_leaves_a_core_that_another_process_keeps_busy(busy_core: int) -> None:
    threads = torch.get_num_threads()
    try:
        time.sleep(0.3)  # the loop is running
        auto = AutoThreads(share=1)
        time.sleep(0.5)  # an interval to measure it over
        assert auto.choose() <= len(CPUS) - 1
        assert torch.get_num_threads() == auto.threads
    finally:
        torch.set_num_threads(threads)


def test_a_sweeps_share_caps_each_run() -> None:
    threads = torch.get_num_threads()
    try:
        assert AutoThreads(share=len(CPUS)).choose() == 1
    finally:
        torch.set_num_threads(threads)


def test_a_bad_share_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CPU_SHARE_ENV, "two")
    with pytest.raises(UserError, match=f"{CPU_SHARE_ENV}: 'two' is not a whole number"):
        cpu_share()


def test_a_bad_setting_names_the_choices() -> None:
    with pytest.raises(UserError, match="must be auto, a whole number from 1 to 1024, or null"):
        load_config(data={"train": {"torch_threads": "all"}})


def _trained_state(threads: int, folder: Path) -> torch.Tensor:
    # Large enough that torch's intra-op parallelism engages (ops over >32k elements).
    config = load_config(
        data={
            "env": {"name": "cooperative_navigation", "backend": "vmas", "agents": 3},
            "train": {
                "num_envs": 80,
                "rollout_steps": 25,
                "minibatch_size": 1000,
                "n_epochs": 2,
                "updates": 2,
                "eval_every": 0,
                "torch_threads": threads,
            },
            "logging": {"dir": str(folder), "progress": False},
        }
    )
    result = run_training(config)
    return torch.cat([result.theta.flatten(), result.opt_state.flatten()])


@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs")
def test_the_thread_count_does_not_change_a_vmas_ppo_run(tmp_path: Path) -> None:
    # What lets the packaged VMAS PPO configs use auto; continuous PPO on mpe is not invariant.
    one = _trained_state(1, tmp_path / "one")
    two = _trained_state(2, tmp_path / "two")
    assert torch.equal(one, two)


def test_auto_tries_every_free_cpu_and_one_then_keeps_the_faster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("marlplug.train.threads.other_processes_cores", lambda *_: 0.0)
    threads = torch.get_num_threads()
    try:
        for one_seconds, kept in ((1.0, 1), (3.0, 2)):
            auto = AutoThreads(share=1)
            auto.cpus = [0, 1]  # as on a 2-core machine, with nothing else running
            tried = []
            for seconds in (9.0, 2.0, one_seconds, 1.0, 1.0):  # warm-up, 2 threads, 1 thread, ...
                tried.append(auto.choose())
                auto.timed(seconds)
            assert tried == [2, 2, 1, kept, kept]
            assert auto.one_is_faster is (kept == 1)
    finally:
        torch.set_num_threads(threads)
