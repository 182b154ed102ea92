"""The local backend: real worker processes, stragglers, a killed learner, re-dispatch, clean shutdown."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import torch

from marlplug.algorithms.protocol import AgentUpdate
from marlplug.coding import MDSCode, UncodedScheme
from marlplug.coding.stragglers import StragglerModel
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController, LearnerError, RoundTimeoutError
from marlplug.seeding import derive_seed
from tests.distributed.helpers import LinearProgram, centralized, linear_batch, state_error

M, N = 3, 5


@pytest.fixture(scope="module")
def mds_run() -> dict[str, object]:
    """Four wall-clock rounds of MDS on 5 worker processes; learners 0-2 are killed in round 2."""
    program = LinearProgram(M)
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
    state = reference = AgentUpdate(*program.init_state(0))
    logs, errors, pids, stats = [], [], [], []
    with controller:
        for round_index in range(4):
            batch = linear_batch(program, seed=round_index)
            if round_index == 2:
                pids = [backend.pid(j) for j in range(3)]
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
            seed = derive_seed(0, round_index)
            state, log = controller.update(
                state.theta, state.opt_state, batch, round_index, seed=seed
            )
            reference = centralized(program, reference.theta, reference.opt_state, batch, seed)
            errors.append(state_error(state, reference))
            stats.append((state.stats["loss"], reference.stats["loss"]))
            logs.append(log)
        live = [backend.pid(j) for j in range(N)]
    return {
        "logs": logs,
        "errors": errors,
        "stats": stats,
        "killed": pids,
        "live": live,
        "backend": backend,
    }


def test_wall_clock_rounds_equal_the_centralized_update(mds_run: dict) -> None:
    assert max(mds_run["errors"]) <= 1e-6
    for coded, reference in mds_run["stats"]:  # the learners' per-agent stats came back too
        assert torch.allclose(coded, reference, rtol=1e-6)


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
    assert all("killed by SIGKILL" in failure for failure in killed_round.failures)
    assert not set(mds_run["killed"]) & set(mds_run["live"])  # new processes took their place


def test_every_process_is_gone_after_close(mds_run: dict) -> None:
    for pid in mds_run["live"]:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_an_undecodable_round_redispatches_missing_agents_instead_of_hanging() -> None:
    program = LinearProgram(2)
    matrix = UncodedScheme().assignment_matrix(2, 3, 0)
    stragglers = StragglerModel(count=1, delay_s=60.0, seed=0)  # far beyond the timeout
    with CodedController(
        program, matrix, LocalBackend(3), stragglers=stragglers, round_timeout_s=1.0
    ) as controller:
        theta, opt_state = program.init_state(0)
        batch = linear_batch(program)
        new, log = controller.update(theta, opt_state, batch, 0, seed=1)
    assert len(log.redispatched_agents) == 1
    assert log.round_s < 30
    assert state_error(new, centralized(program, theta, opt_state, batch, seed=1)) <= 1e-6


def test_a_round_that_never_decodes_raises_a_clear_error() -> None:
    program = LinearProgram(2)
    matrix = np.eye(3, 2)
    backend = LocalBackend(3)
    with CodedController(program, matrix, backend, round_timeout_s=0.5) as controller:
        (theta, opt_state), batch = program.init_state(0), linear_batch(program)
        controller.update(theta, opt_state, batch, 0, seed=0)  # starts the workers
        for learner in range(3):
            os.kill(backend.pid(learner), signal.SIGSTOP)  # alive but frozen: no answer, no EOF
        try:
            with pytest.raises(RoundTimeoutError, match="not decodable"):
                controller.update(theta, opt_state, batch, 1, seed=1)
        finally:
            for learner in range(3):
                os.kill(backend.pid(learner), signal.SIGCONT)


class BrokenProgram:
    """An update that raises: a bug must stop the run with its message, not look like a straggler."""

    num_agents = 2
    theta_size = 3
    opt_state_size = 1

    def update(self, theta_all, opt_state, batch, agents, seed):  # type: ignore[no-untyped-def]
        raise ValueError("the update is broken")


def test_an_exception_in_a_learner_stops_the_round_with_its_message() -> None:
    program = LinearProgram(2)
    with (
        CodedController(
            BrokenProgram(), np.eye(2), LocalBackend(2), round_timeout_s=30
        ) as controller,
        pytest.raises(LearnerError, match="the update is broken"),
    ):
        controller.update(torch.zeros(2, 3), torch.zeros(2, 1), linear_batch(program), 0, seed=0)
