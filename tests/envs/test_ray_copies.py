"""``env.copies: ray``: each copy of a non-vectorized env in a Ray actor gives exactly the serial
copies' transitions (and so the same training and resume), its actors end with the env (after an
exception mid-training too), a Ray it started is shut down, and its mistakes are one line.

Starting a local Ray takes 20-80 s on a busy 2-core machine: the tests that compare transitions
share one (``ray_running``, which the env copies join and leave running); two tests start their own
to see it shut down.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from marlplug.config import load_config
from marlplug.envs import available_envs, make_env
from marlplug.errors import ConfigError, UserError
from marlplug.runs.run_config import load_run_config
from marlplug.train import run_training
from tests.envs.copies_checks import NON_VECTORIZED, assert_serial_transitions, small_run


def dead(actor: Any) -> bool:
    """Whether calls to ``actor`` fail as to a dead actor within 30 s (``ray.kill`` is sent to
    Ray's control plane, so a call right after it may still be answered)."""
    import ray
    from ray.exceptions import RayActorError

    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        try:
            ray.get(actor.pid.remote(), timeout=30)
        except RayActorError:
            return True
        time.sleep(0.1)
    return False


def test_without_ray_installed_the_choice_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(UserError) as caught:
        make_env("cooperative_navigation", agents=2, num_envs=2, copies="ray")
    message = str(caught.value)
    assert message.startswith("env.copies: 'ray' needs Ray") and "\n" not in message
    assert "serial, processes" in message


@pytest.mark.skipif("vmas" not in available_envs(), reason="needs the marlplug-vmas plugin")
def test_a_vectorized_backend_refuses_ray_copies_in_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        make_env("cooperative_navigation", backend="vmas", num_envs=2, copies="ray")
    message = str(caught.value)
    assert message.startswith("env.copies: ray runs copies of an unbatched env")
    assert "env.copies: serial" in message and "\n" not in message


def test_an_unreachable_cluster_is_one_line_with_exit_status_2(
    run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("ray")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")  # nothing listens on port 1
    result = run_cli(
        *("train", "--no-progress", "--set", "env.copies=ray", "--set", "train.num_envs=2"),
        *("--set", "train.updates=1", "--set", f"logging.dir={tmp_path}"),
    )
    assert result.exit_code == 2 and "Traceback" not in result.err, result.err
    line = result.err.strip().splitlines()[-1]
    assert line.startswith("error: env.copies: cannot reach the Ray cluster at '127.0.0.1:1'")
    assert "RAY_ADDRESS" in line


@pytest.mark.slow
def test_the_actors_end_with_their_env_and_the_ray_it_started_with_the_last() -> None:
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    first = make_env("cooperative_navigation", agents=2, num_envs=2, seed=0, copies="ray")
    second = make_env("cooperative_navigation", agents=2, num_envs=2, seed=0, copies="ray")
    try:
        from marlplug.envs.ray_copies import copy_nodes

        assert copy_nodes(first) == [ray.get_runtime_context().get_node_id()] * 2
        first_actors = [copy.actor for copy in first._envs]
        first.close()
        assert all(dead(actor) for actor in first_actors)
        assert second.rollout(3)["next", "agent", "reward"].shape == (2, 3, 2, 1)
    finally:
        first.close(raise_if_closed=False)
        second.close()
    assert not ray.is_initialized()  # the Ray the copies started is shut down


@pytest.mark.slow
def test_an_exception_mid_training_kills_the_actors_and_shuts_ray_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ray = pytest.importorskip("ray")
    from marlplug.envs.ray_copies import RayCopies, copy_pids
    from marlplug.train.run_state import RunState

    pids: list[int] = []
    original_start = RayCopies.start

    def start(self: RayCopies) -> None:
        original_start(self)
        pids.extend(copy_pids(self))

    def fail(self: Any) -> None:  # the first checkpoint: after an iteration of training
        raise RuntimeError("failed mid-training")

    monkeypatch.setattr(RayCopies, "start", start)
    monkeypatch.setattr(RunState, "save", fail)
    config = load_config(data=small_run("ray", tmp_path))
    with pytest.raises(RuntimeError, match="failed mid-training"):
        run_training(config)
    assert len(pids) == 2
    assert not ray.is_initialized()
    # The actors' processes end on their own once Ray is down (their node is gone).
    deadline = time.monotonic() + GONE_WITHIN_S
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if _alive(pid)]


#: How long an actor's process may take to end after the Ray it ran on was shut down.
GONE_WITHIN_S = 30.0


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has ended: only its exit status is left to collect)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.fixture(scope="module")
def ray_running() -> Iterator[None]:
    """A local Ray for the module's remaining tests; the env copies join it and leave it up."""
    ray = pytest.importorskip("ray")
    from marlplug.ray_connection import loopback_only

    with loopback_only():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "scenario", "options"), NON_VECTORIZED)
def test_ray_actors_give_the_serial_transitions(
    ray_running: None, backend: str, scenario: str, options: dict[str, Any]
) -> None:
    assert_serial_transitions("ray", backend, scenario, options, num_envs=3)


def _stopped_and_resumed(copies: str, folder: Path) -> torch.Tensor:
    first = run_training(load_config(data=small_run(copies, folder)), updates=1)
    resumed = run_training(load_run_config(first.run_dir), resume_dir=first.run_dir)
    return torch.cat([resumed.theta.flatten(), resumed.opt_state.flatten()])


@pytest.mark.slow
def test_a_run_on_ray_copies_trains_and_resumes_as_serial_does(
    ray_running: None, tmp_path: Path
) -> None:
    serial = _stopped_and_resumed("serial", tmp_path / "serial")
    on_ray = _stopped_and_resumed("ray", tmp_path / "ray")
    assert torch.equal(serial, on_ray)


@pytest.mark.slow
def test_bench_envs_runs_ray_copies_beside_serial(
    ray_running: None, run_cli: Callable[..., Any]
) -> None:
    import json

    result = run_cli(
        *("bench", "envs", "--json", "--copies", "ray", "--copies", "serial"),
        *("--env", "mpe/cooperative_navigation", "--agents", "2", "--num-envs", "2"),
        *("--steps", "2", "--trials", "1"),
    )
    assert result.exit_code == 0, result.err
    rows = json.loads(result.out)
    assert [row["copies"] for row in rows] == ["serial", "ray"]
    serial, on_ray = rows
    # vs_serial is rounded to 0.01 and steps/s to 0.1, each from unrounded medians: the ratio of
    # the rounded rows agrees to the rounding (0.27 against 0.267, 26.51 against 26.49).
    assert on_ray["vs_serial"] == pytest.approx(
        on_ray["steps_per_s"] / serial["steps_per_s"], rel=0.02, abs=0.01
    )


def test_env_copies_and_coded_learners_on_two_rays_are_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    data = {
        "env": {"name": "cooperative_navigation", "agents": 2, "copies": "ray"},
        "train": {"num_envs": 2},
        "coding": {
            "scheme": "replication",
            "learners": 2,
            "backend": "ray",
            "ray_address": "10.0.0.5:6379",
        },
    }
    with pytest.raises(ConfigError) as caught:
        load_config(data=data)
    message = str(caught.value)
    assert message.startswith("env.copies: ray joins the Ray at RAY_ADDRESS (unset")
    assert message.endswith("set RAY_ADDRESS=10.0.0.5:6379") and "\n" not in message
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    assert load_config(data=data).env.copies == "ray"  # both join the cluster at RAY_ADDRESS
