"""Decoded θ' equals the centralized update for every built-in code and decodable straggler pattern."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from marlplug.coding import make_decoder
from marlplug.coding.exact import from_ordinals
from marlplug.distributed.controller import CodedController
from marlplug.distributed.learner import learner_compute
from marlplug.distributed.stragglers import StragglerModel
from marlplug.plugins import get_plugin_manager
from tests.distributed.helpers import centralized, relative_error, small_batch, small_program

M, N = 4, 8
BUILT_IN = ["uncoded", "replication", "mds", "random_sparse", "ldpc", "vandermonde"]


def scheme_matrix(
    name: str, num_agents: int = M, num_learners: int = N
) -> tuple[object, np.ndarray]:
    scheme = get_plugin_manager().registry("code")[name]()
    return scheme, scheme.assignment_matrix(num_agents, num_learners, 0)


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_decodable_straggler_pattern_recovers_the_centralized_update(name: str) -> None:
    program = small_program(M)
    theta, batch = program.init_state(0), small_batch(program)
    expected = centralized(program, theta, batch, round_index=5)
    scheme, matrix = scheme_matrix(name)
    coded = {
        j: learner_compute(program, matrix[j], theta, batch, round_index=5, seed=0)[0]
        for j in range(N)
        if matrix[j].any()
    }
    checked = 0
    for late in range(0, N - M + 1):
        for stragglers in itertools.combinations(range(N), late):
            decoder = make_decoder(matrix, scheme=scheme)
            for j in coded:
                if j not in stragglers:
                    decoder.add(j, coded[j])
            if not decoder.decodable:
                continue
            decoded = from_ordinals(decoder.decode(), torch.float32)
            assert relative_error(decoded, expected) <= 1e-5, (name, stragglers)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", ["mds", "ldpc", "replication", "uncoded"])
def test_simulated_rounds_track_the_centralized_run(name: str) -> None:
    program = small_program(M)
    scheme, matrix = scheme_matrix(name)
    stragglers = StragglerModel(count=2, delay_s=1.0, seed=3)
    controller = CodedController(
        program, matrix, None, scheme=scheme, stragglers=stragglers, clock="simulated"
    )
    theta = reference = program.init_state(0)
    for round_index in range(4):
        batch = small_batch(program, seed=round_index)
        theta, log = controller.update(theta, batch, round_index)
        reference = centralized(program, reference, batch, round_index)
        assert relative_error(theta, reference) <= 1e-5
        assert log.round_s >= log.decode_s > 0
        # The round ends on the virtual clock: a straggler is only waited for when it is needed.
        late_used = set(log.learners_used) & set(log.stragglers)
        assert (log.wait_s >= 1.0) == bool(late_used)


def test_mds_ignores_up_to_n_minus_m_stragglers_while_uncoded_pays() -> None:
    program = small_program(M)
    timings = {}
    for name in ["mds", "uncoded"]:
        scheme, matrix = scheme_matrix(name)
        controller = CodedController(
            program,
            matrix,
            None,
            scheme=scheme,
            stragglers=StragglerModel(count=N - M, delay_s=5.0, seed=1),
            clock="simulated",
        )
        _, log = controller.update(program.init_state(0), small_batch(program), 0)
        timings[name] = log.round_s
    assert timings["mds"] < 5.0 <= timings["uncoded"]


def test_matrix_must_match_the_agents() -> None:
    from marlplug.errors import UserError

    with pytest.raises(UserError, match="columns"):
        CodedController(small_program(3), np.eye(4), None, clock="simulated")
    with pytest.raises(UserError, match="clock"):
        CodedController(small_program(4), np.eye(4), None, clock="lunar")
