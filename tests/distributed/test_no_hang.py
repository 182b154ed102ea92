"""No hang: a full-rank but ill-conditioned round is completed by re-dispatch, a round that still cannot
decode fails with one line naming the round, the learners heard from and the reason, an infinite
timeout is refused, and a code that cannot decode is refused before the run starts."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from marlplug.cli.train import default_config_path
from marlplug.coding import VandermondeCode
from marlplug.coding.stragglers import StragglerModel
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController, RoundTimeoutError
from marlplug.errors import UserError
from tests.distributed.helpers import LinearProgram, centralized, linear_batch, state_error

M, N = (
    7,
    8,
)  # the authors' Vandermonde at these sizes: every learner's row has rank 7, condition 1.7e6


def vandermonde_controller(backend: LocalBackend, timeout_s: float) -> CodedController:
    scheme = VandermondeCode()
    return CodedController(
        LinearProgram(M),
        scheme.assignment_matrix(M, N, 0),
        backend,
        scheme=scheme,
        round_timeout_s=timeout_s,
    )


def in_thread(function: Callable[[], Any], timeout_s: float) -> dict[str, Any]:
    """Run ``function`` in a daemon thread; ``{"result"|"error": ...}``, or ``{}`` if it hung."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = function()
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    return outcome


def test_an_ill_conditioned_full_rank_round_is_completed_by_redispatch() -> None:
    program = LinearProgram(M)
    (theta, opt_state), batch = program.init_state(0), linear_batch(program)
    with vandermonde_controller(LocalBackend(N), timeout_s=5.0) as controller:
        # Before the fix this round waited forever: rank was complete, so nothing was re-dispatched.
        outcome = in_thread(
            lambda: controller.update(theta, opt_state, batch, 0, seed=0), timeout_s=240
        )
    assert outcome, "the round hung"
    assert "error" not in outcome, outcome.get("error")
    new, log = outcome["result"]
    assert log.redispatched_agents  # completed with one-agent tasks, chosen for conditioning
    assert state_error(new, centralized(program, theta, opt_state, batch, seed=0)) <= 1e-6


def test_a_round_that_cannot_decode_after_redispatch_names_round_learners_and_reason() -> None:
    program = LinearProgram(M)
    (theta, opt_state), batch = program.init_state(0), linear_batch(program)
    backend = LocalBackend(N)
    with vandermonde_controller(backend, timeout_s=3.0) as controller:
        controller.update(theta, opt_state, batch, 0, seed=0)  # starts the workers
        pids = [backend.pid(j) for j in range(N)]

        def freeze_after_answers() -> None:
            time.sleep(1.5)  # the 8 answers (tens of ms each) are in; the re-dispatch is not
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)

        freezer = threading.Thread(target=freeze_after_answers)
        freezer.start()
        try:
            start = time.monotonic()
            with pytest.raises(RoundTimeoutError) as caught:
                controller.update(theta, opt_state, batch, 1, seed=1)
            elapsed = time.monotonic() - start
        finally:
            freezer.join()
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("round 1: not decodable 3 s after re-dispatching agents [")
    assert "heard from learners [" in message
    assert "condition number" in message or "rank" in message
    assert elapsed < 60  # two timeouts, not forever
    assert caught.value.round_log is not None and caught.value.round_log.round_index == 1


@pytest.mark.parametrize("timeout_s", [float("inf"), float("nan"), 0.0, -1.0])
def test_an_unbounded_round_timeout_is_refused(timeout_s: float) -> None:
    with pytest.raises(UserError, match=r"coding\.round_timeout_s: must be a finite number"):
        CodedController(
            LinearProgram(2),
            VandermondeCode().assignment_matrix(2, 3, 0),
            None,
            clock="simulated",
            stragglers=StragglerModel(count=1, delay_s=float("inf")),
            round_timeout_s=timeout_s,
        )


def test_train_refuses_a_code_that_cannot_decode_before_any_work(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    result = run_cli(
        "train",
        str(default_config_path().parent / "coded_maddpg.yaml"),
        "--set",
        f"env.agents={M}",
        "--set",
        f"coding.learners={N}",
        "--set",
        "coding.scheme=vandermonde",
        "--set",
        "coding.round_timeout_s=5",
        "--set",
        f"logging.dir={tmp_path}",
    )
    assert result.exit_code == 2
    assert result.err.count("\n") == 1, result.err
    assert "coding.scheme: 'vandermonde' cannot decode M=7 agents" in result.err
    assert "condition number" in result.err and "codes analyze -M 7 -N 8" in result.err
    assert not list(tmp_path.iterdir())  # no run folder was made


def test_more_stragglers_than_busy_learners_is_refused(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    result = run_cli(
        "train",
        str(default_config_path().parent / "coded_maddpg.yaml"),
        "--set",
        "coding.stragglers.count=6",
        "--set",
        f"logging.dir={tmp_path}",
    )
    assert result.exit_code == 2
    assert "coding.stragglers.count: 6 stragglers per round" in result.err


def test_a_run_whose_round_fails_stops_with_one_line_and_still_draws_the_timeline(
    tmp_path: Path,
) -> None:
    from marlplug import load_config
    from marlplug.train.coded_run import run_maddpg
    from tests.distributed.sockets import descendants

    config = load_config(
        data={},
        overrides=[
            "env.agents=3",
            "algorithm.name=maddpg",
            "algorithm.minibatch_size=16",
            "algorithm.learning_starts=16",
            "algorithm.steps_per_iteration=10",
            "algorithm.hidden_sizes=[16]",
            "logging.progress=false",
            "train.updates=1000",
            "coding.scheme=mds",
            "coding.learners=5",
            "coding.round_timeout_s=2",
        ],
    )
    run_dir = tmp_path / "run"
    frozen: list[int] = []

    def freeze_learners_after_two_rounds() -> None:
        rounds = run_dir / "rounds.csv"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if rounds.exists() and rounds.read_text().count(",wall,") >= 2:  # 2 coded rounds
                break
            time.sleep(0.2)
        for pid in descendants(os.getpid()) - {os.getpid()}:
            os.kill(pid, signal.SIGSTOP)  # learners (and their fork server) stop answering
            frozen.append(pid)
        # The round fails after 2 + 2 s. Shutting the backend down then needs the fork server (it
        # reports its children's exit), so let the processes go on well after that point: the run
        # must have failed by then with a one-line error, not waited for them.
        time.sleep(12)
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    freezer = threading.Thread(target=freeze_learners_after_two_rounds)
    freezer.start()
    try:
        with pytest.raises(RoundTimeoutError) as caught:
            run_maddpg(config, run_dir=run_dir)
    finally:
        freezer.join()
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    message = str(caught.value)
    assert "\n" not in message
    assert "not decodable 2 s after re-dispatching agents" in message
    assert message.endswith(f"timeline: {run_dir / 'timeline.png'}")
    assert (run_dir / "timeline.png").stat().st_size > 1000


def test_train_refuses_an_infinite_round_timeout_before_any_work(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    result = run_cli(
        "train",
        str(default_config_path().parent / "coded_maddpg.yaml"),
        "--set",
        "coding.round_timeout_s=.inf",
        "--set",
        "coding.stragglers.delay_s=.inf",
        "--set",
        f"logging.dir={tmp_path}",
    )
    assert result.exit_code == 2
    # The schema refuses both infinite values: one error line and "(and 1 more problem)".
    assert result.err.count("\n") <= 2 and "Traceback" not in result.err, result.err
    assert "round_timeout_s" in result.err
    assert not list(tmp_path.iterdir())
