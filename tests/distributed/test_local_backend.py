"""The local backend: real worker processes, stragglers, a killed learner, re-dispatch, clean shutdown."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from marlplug.coding import MDSCode, UncodedScheme
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController, LearnerError, RoundTimeoutError
from marlplug.distributed.stragglers import StragglerModel
from tests.distributed.helpers import centralized, relative_error, small_batch, small_program

M, N = 3, 5


@pytest.fixture(scope="module")
def mds_run() -> dict[str, object]:
    """Four wall-clock rounds of MDS on 5 worker processes; learners 0-2 are killed in round 2."""
    program = small_program(M)
    scheme = MDSCode()
    matrix = scheme.assignment_matrix(M, N, 0)
    backend = LocalBackend(N)
    controller = CodedController(
        program,
        matrix,
        backend,
        scheme=scheme,
        stragglers=StragglerModel(count=1, delay_s=0.5, seed=0),
        round_timeout_s=20,
    )
    theta = reference = program.init_state(0)
    logs, errors, pids = [], [], []
    with controller:
        for round_index in range(4):
            batch = small_batch(program, seed=round_index)
            if round_index == 2:
                pids = [backend.pid(j) for j in range(3)]
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
            theta, log = controller.update(theta, batch, round_index)
            reference = centralized(program, reference, batch, round_index)
            errors.append(relative_error(theta, reference))
            logs.append(log)
        live = [backend.pid(j) for j in range(N)]
    return {"logs": logs, "errors": errors, "killed": pids, "live": live, "backend": backend}


def test_wall_clock_rounds_equal_the_centralized_update(mds_run: dict) -> None:
    assert max(mds_run["errors"]) <= 1e-5


def test_the_round_does_not_wait_for_a_straggler_it_does_not_need(mds_run: dict) -> None:
    for log in mds_run["logs"]:
        assert len(log.stragglers) == 1
        if log.restarted:
            continue  # with 3 of 5 learners killed, waiting for the straggler can be right
        assert not set(log.stragglers) & set(log.learners_used)
        assert log.wait_s < 0.5  # the 0.5 s delay never shows up


def test_a_killed_learner_is_reported_and_restarted(mds_run: dict) -> None:
    killed_round = mds_run["logs"][2]
    assert sorted(killed_round.restarted) == [0, 1, 2]
    assert all("exited" in failure for failure in killed_round.failures)
    assert not set(mds_run["killed"]) & set(mds_run["live"])  # new processes took their place


def test_every_process_is_gone_after_close(mds_run: dict) -> None:
    for pid in mds_run["live"]:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_an_undecodable_round_redispatches_missing_agents_instead_of_hanging() -> None:
    program = small_program(2)
    matrix = UncodedScheme().assignment_matrix(2, 3, 0)
    stragglers = StragglerModel(count=1, delay_s=60.0, seed=0)  # far beyond the timeout
    with CodedController(
        program, matrix, LocalBackend(3), stragglers=stragglers, round_timeout_s=1.0
    ) as controller:
        theta = program.init_state(0)
        batch = small_batch(program)
        new, log = controller.update(theta, batch, 0)
    assert len(log.redispatched_agents) == 1
    assert log.round_s < 30
    assert relative_error(new, centralized(program, theta, batch, 0)) <= 1e-5


def test_a_round_that_never_decodes_raises_a_clear_error() -> None:
    program = small_program(2)
    matrix = np.eye(3, 2)
    backend = LocalBackend(3)
    with CodedController(program, matrix, backend, round_timeout_s=0.5) as controller:
        theta, batch = program.init_state(0), small_batch(program)
        controller.update(theta, batch, 0)  # starts the workers
        for learner in range(3):
            os.kill(backend.pid(learner), signal.SIGSTOP)  # alive but frozen: no answer, no EOF
        try:
            with pytest.raises(RoundTimeoutError, match="not decodable"):
                controller.update(theta, batch, 1)
        finally:
            for learner in range(3):
                os.kill(backend.pid(learner), signal.SIGCONT)


class BrokenProgram:
    """An update that raises: a bug must stop the run with its message, not look like a straggler."""

    num_agents = 2
    state_size = 3

    def update(self, theta_all, agents, batch, seeds):  # type: ignore[no-untyped-def]
        raise ValueError("the update is broken")


def test_an_exception_in_a_learner_stops_the_round_with_its_message() -> None:
    program = small_program(2)
    with (
        CodedController(
            BrokenProgram(), np.eye(2), LocalBackend(2), round_timeout_s=30
        ) as controller,
        pytest.raises(LearnerError, match="the update is broken"),
    ):
        controller.update(program.init_state(0)[:, :3], small_batch(program), 0)
