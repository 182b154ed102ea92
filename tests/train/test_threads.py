"""``train.torch_threads: auto``: the CPUs other processes leave free, a sweep's share, and a result
that does not depend on the thread count (what makes ``auto`` safe for reproducibility): every
built-in algorithm trains the same run bit for bit on 1 and 2 threads, and ``auto`` gives more than
one only to runs whose algorithm declares them invariant."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from marlplug.config import load_config
from marlplug.errors import UserError
from marlplug.plugins import get_plugin_manager
from marlplug.runs.iteration_report import IterationLog
from marlplug.train.loop import Training
from marlplug.train.orchestrator import run
from marlplug.train.run import run_training
from marlplug.train.threads import (
    CPU_SHARE_ENV,
    MAX_INVARIANT_THREADS,
    AutoThreads,
    cpu_share,
    thread_invariant,
    usable_cpus,
)

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
        auto = AutoThreads(share=1, invariant=True)
        time.sleep(0.5)  # an interval to measure it over
        assert auto.choose() <= len(CPUS) - 1
        assert torch.get_num_threads() == auto.threads
    finally:
        torch.set_num_threads(threads)


def test_a_sweeps_share_caps_each_run() -> None:
    threads = torch.get_num_threads()
    try:
        assert AutoThreads(share=len(CPUS), invariant=True).choose() == 1
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
            auto = AutoThreads(share=1, invariant=True)
            auto.cpus = [0, 1]  # as on a 2-core machine, with nothing else running
            tried = []
            for seconds in (9.0, 2.0, one_seconds, 1.0, 1.0):  # warm-up, 2 threads, 1 thread, ...
                tried.append(auto.choose())
                auto.timed(seconds)
            assert tried == [2, 2, 1, kept, kept]
            assert auto.one_is_faster is (kept == 1)
    finally:
        torch.set_num_threads(threads)


# Small runs of every built-in algorithm, 2 updates each. PPO's are the runs it declares invariant
# (at least SMALL_GEMM_ROWS rows in every minibatch and collection step), with an evaluation after
# each update; the replay-based algorithms set one thread for their collection and updates, and the
# run sets one for the rest (sampling the replay buffer, the Polyak steps' rows) whatever the
# process's count (1 or 2 here) was.
PPO = [
    "algorithm.name=ppo",
    "algorithm.hidden_size=16",
    "algorithm.feature_dim=16",
    "train.num_envs=12",
    "train.rollout_steps=10",
    "train.minibatch_size=40",
    "train.n_epochs=2",
    "train.updates=2",
    "train.eval_every=1",
    "train.eval_episodes=2",
]
REPLAY = [
    "algorithm.minibatch_size=32",
    "algorithm.learning_starts=50",
    "algorithm.steps_per_iteration=25",
    "algorithm.hidden_sizes=[16, 16]",
    "train.updates=4",  # updates at iterations 3 and 4
    "train.eval_every=0",
]
MPE = ["env.name=cooperative_navigation", "env.agents=3", "env.max_steps=10"]
GIVE_WAY = ["env.backend=vmas", "env.name=give_way", "env.max_steps=25"]
RUNS = {
    "ppo-mpe": [*PPO, *MPE],
    "ppo-mpe-continuous": [*PPO, *MPE, "env.continuous_actions=true"],
    "ppo-vmas": [*PPO, *MPE, "env.backend=vmas"],
    "ppo-vmas-continuous": [*PPO, "env.backend=vmas", "env.name=balance", "env.max_steps=10"],
    "ppo-shared": [*PPO, *MPE, "env.backend=vmas", "algorithm.share_params=true"],
    "maddpg": ["algorithm.name=maddpg", *REPLAY, "algorithm.episode_length=25", *GIVE_WAY],
    "iddpg": ["algorithm.name=iddpg", *REPLAY, "algorithm.episode_length=25", *GIVE_WAY],
    "isac": ["algorithm.name=isac", *REPLAY, "algorithm.episode_length=25", *GIVE_WAY],
    "masac": ["algorithm.name=masac", *REPLAY, "algorithm.episode_length=25", *GIVE_WAY],
    "iql": ["algorithm.name=iql", *REPLAY, *MPE],
    "vdn": ["algorithm.name=vdn", *REPLAY, *MPE],
    "qmix": ["algorithm.name=qmix", *REPLAY, *MPE],
}


def _run_on(threads: int, overrides: list[str], folder: Path) -> tuple[torch.Tensor, str]:
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)  # what the replay-based algorithms leave to the process
    try:
        options = [*overrides, "logging.progress=false"]
        if "algorithm.name=ppo" in overrides:
            options.append(f"train.torch_threads={threads}")
        result = run(load_config(data={}, overrides=options), run_dir=folder)
    finally:
        torch.set_num_threads(previous)
    state = torch.cat([result.theta.flatten(), result.opt_state.flatten()])
    # What a run reports: every update's logged stats and every evaluation's return (as text:
    # exact for floats, and a NaN equals a NaN).
    return state, repr(
        [log.stats for log in result.iterations] + [p.mean for p in result.evaluations]
    )


@pytest.mark.parametrize("name", ["vdn", "maddpg"])
def test_a_replay_run_does_its_own_work_on_one_thread(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    # With the process's count of 2 between the algorithm's one-thread blocks, a torch worker
    # thread spun after every parallel region there, taking most of the other core: two VDN runs
    # side by side on 2 cores trained 4x slower each.
    seen: list[int] = []
    step = Training.step

    def counted(training: Training) -> IterationLog:
        seen.append(torch.get_num_threads())
        return step(training)

    monkeypatch.setattr(Training, "step", counted)
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        options = [*RUNS[name], "logging.progress=false"]
        run(load_config(data={}, overrides=options), run_dir=tmp_path)
        assert torch.get_num_threads() == 2  # the process's count, given back after the run
    finally:
        torch.set_num_threads(previous)
    assert seen and set(seen) == {1}


def test_every_built_in_algorithm_has_a_thread_count_run() -> None:
    runs = {
        next(o for o in options if o.startswith("algorithm.name=")) for options in RUNS.values()
    }
    names = {option.removeprefix("algorithm.name=") for option in runs}
    assert names == set(get_plugin_manager().registry("algorithm"))


@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs")
@pytest.mark.parametrize("name", list(RUNS))
def test_the_thread_count_does_not_change_a_run(tmp_path: Path, name: str) -> None:
    overrides = RUNS[name]
    if "algorithm.name=ppo" in overrides:  # what lets auto give these runs more than one thread
        assert thread_invariant(load_config(data={}, overrides=overrides))
    one, one_reported = _run_on(1, overrides, tmp_path / "one")
    two, two_reported = _run_on(2, overrides, tmp_path / "two")
    assert torch.equal(one, two)
    assert one_reported == two_reported
    # The updates moved the rows: two runs that never trained would pass.
    start, _ = _run_on(1, [*overrides, "train.updates=1"], tmp_path / "start")
    assert not torch.equal(start, one)


@pytest.mark.parametrize(
    ("overrides", "invariant"),
    [
        (RUNS["ppo-vmas"], True),
        ([], False),  # one mpe copy: products of 1 to 3 rows in collection
        ([*RUNS["ppo-vmas"], "train.minibatch_size=10"], False),  # 10-row products differ
        (RUNS["maddpg"], False),  # declares nothing (it runs its updates on one thread)
    ],
)
def test_auto_gives_several_threads_only_to_a_declared_invariant_run(
    overrides: list[str], invariant: bool
) -> None:
    config = load_config(data={}, overrides=overrides)
    assert thread_invariant(config) is invariant
    threads = torch.get_num_threads()
    try:
        assert AutoThreads(share=1, invariant=False).choose() == 1
    finally:
        torch.set_num_threads(threads)


def test_auto_gives_an_invariant_run_at_most_the_verified_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Past MAX_INVARIANT_THREADS, MKL splits products of tens of rows differently (threads.py).
    monkeypatch.setattr("marlplug.train.threads.other_processes_cores", lambda *_: 0.0)
    threads = torch.get_num_threads()
    try:
        auto = AutoThreads(share=1, invariant=True)
        auto.cpus = list(range(4 * MAX_INVARIANT_THREADS))  # an idle machine with many cores
        assert auto.choose() == MAX_INVARIANT_THREADS
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize(("given", "kept"), [(None, "AUTO,STRICT"), ("COMPATIBLE", "COMPATIBLE")])
def test_import_marlplug_turns_on_mkls_strict_mode_unless_set(given: str | None, kept: str) -> None:
    # What the VMAS PPO run above needs on an Intel Xeon (family 6, model 167); a user's own
    # MKL_CBWR stays.
    env = {key: value for key, value in os.environ.items() if key != "MKL_CBWR"}
    if given is not None:
        env["MKL_CBWR"] = given
    code = "import os, marlplug; print(os.environ['MKL_CBWR'])"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == kept
