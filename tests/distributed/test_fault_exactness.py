"""Coded == centralized holds through faults: 60 wall-clock rounds of a learner program with Adam,
learners killed (SIGKILL) mid-run and a straggler every round, end where the centralized run ends —
weights, Adam moments and step counts each within 1e-6 relative."""

from __future__ import annotations

import os
import signal

import pytest
import torch

from marlplug.algorithms.protocol import AgentUpdate
from marlplug.coding import MDSCode
from marlplug.coding.stragglers import StragglerModel
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController
from marlplug.seeding import derive_seed
from tests.distributed.helpers import LinearProgram, centralized, linear_batch, relative_error

M, N, ROUNDS = 3, 5, 60
#: Rounds before which learners are killed, and which ones: the round then runs without them
#: (restarted, their tasks resent), so it decodes from other rows than a fault-free round would.
KILLS = {8: [0, 1], 21: [2], 34: [0, 3, 4], 50: [1]}


def per_part_errors(program: LinearProgram, actual: AgentUpdate, expected: AgentUpdate) -> dict:
    """Relative error per agent of the weights, Adam's m and v, and the step count."""
    size = program.theta_size
    parts = {
        "theta": (actual.theta, expected.theta),
        "m": (actual.opt_state[:, :size], expected.opt_state[:, :size]),
        "v": (actual.opt_state[:, size : 2 * size], expected.opt_state[:, size : 2 * size]),
        "step": (actual.opt_state[:, 2 * size :], expected.opt_state[:, 2 * size :]),
    }
    return {
        f"{name}[{agent}]": relative_error(mine[agent], theirs[agent])
        for name, (mine, theirs) in parts.items()
        for agent in range(M)
    }


@pytest.mark.slow  # 60 wall-clock rounds on 5 worker processes, with 7 restarts
def test_a_run_with_learner_kills_ends_where_the_centralized_run_ends() -> None:
    program = LinearProgram(M)
    start = AgentUpdate(*program.init_state(0))
    batches = [linear_batch(program, seed=r) for r in range(ROUNDS)]
    reference = start
    for round_index, batch in enumerate(batches):
        seed = derive_seed(0, round_index)
        reference = centralized(program, reference.theta, reference.opt_state, batch, seed)

    scheme = MDSCode()
    backend = LocalBackend(N)
    controller = CodedController(
        program,
        scheme.assignment_matrix(M, N, 0),
        backend,
        scheme=scheme,
        stragglers=StragglerModel(count=1, delay_s=0.05, seed=0),
        round_timeout_s=30,
    )
    restarted: list[int] = []
    state = start
    with controller:
        for round_index, batch in enumerate(batches):
            for learner in KILLS.get(round_index, []):
                os.kill(backend.pid(learner), signal.SIGKILL)
            seed = derive_seed(0, round_index)
            state, log = controller.update(
                state.theta, state.opt_state, batch, round_index, seed=seed
            )
            restarted += log.restarted
    assert sorted(set(restarted)) == [0, 1, 2, 3, 4]  # every kill was seen and recovered from
    errors = per_part_errors(program, state, reference)
    worst = max(errors, key=errors.__getitem__)
    assert errors[worst] <= 1e-6, f"{worst}: {errors[worst]:.3g}"
    assert torch.equal(state.opt_state[:, -1], torch.full((M,), float(ROUNDS)))
    assert not torch.equal(state.theta, start.theta)  # it did learn something
