"""Decoded updates equal the centralized update for every built-in code and decodable straggler
pattern: the state rows (θ and optimizer state) and the per-agent statistics the learners report."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pytest
import torch
from tensordict import TensorDictBase

from marlplug.algorithms.protocol import AgentUpdate, LearnerProgram
from marlplug.coding import make_decoder
from marlplug.coding.exact import from_ordinals
from marlplug.coding.stragglers import StragglerModel
from marlplug.distributed.controller import CodedController
from marlplug.distributed.learner import check_one_dtype, learner_compute, split_rows, state_rows
from marlplug.errors import UserError
from marlplug.plugins import get_plugin_manager
from marlplug.seeding import derive_seed
from tests.distributed.helpers import (
    LinearProgram,
    centralized,
    everyone,
    linear_batch,
    maddpg_program,
    state_error,
)

M, N = 4, 8
BUILT_IN = ["uncoded", "replication", "mds", "random_sparse", "ldpc", "vandermonde"]


def scheme_matrix(
    name: str, num_agents: int = M, num_learners: int = N
) -> tuple[object, np.ndarray]:
    scheme = get_plugin_manager().registry("code")[name]()
    return scheme, scheme.assignment_matrix(num_agents, num_learners, 0)


def test_the_test_program_meets_the_contract() -> None:
    program = LinearProgram(M)
    assert isinstance(program, LearnerProgram)
    theta, opt_state = program.init_state(0)
    batch = linear_batch(program)
    full = centralized(program, theta, opt_state, batch, seed=3)
    again = centralized(program, theta, opt_state, batch, seed=3)
    assert torch.equal(full.theta, again.theta) and torch.equal(full.opt_state, again.opt_state)
    subset = program.update(theta, opt_state, batch, [3, 1], seed=3)
    assert state_error(subset, AgentUpdate(full.theta[[3, 1]], full.opt_state[[3, 1]])) <= 1e-6
    other_seed = centralized(program, theta, opt_state, batch, seed=4)
    assert not torch.equal(other_seed.theta, full.theta)  # the seed matters


def all_patterns(program: LearnerProgram, batch: object, name: str) -> int:
    """Decode every decodable straggler pattern of ``name``; returns how many were checked."""
    theta, opt_state = program.init_state(0)
    expected = centralized(program, theta, opt_state, batch, seed=5)  # type: ignore[arg-type]
    scheme, matrix = scheme_matrix(name)
    state = state_rows(theta, opt_state)
    answers = {
        j: learner_compute(program, matrix[j], state, batch, seed=5)  # type: ignore[arg-type]
        for j in range(N)
        if matrix[j].any()
    }
    checked = 0
    for late in range(0, N - M + 1):
        for stragglers in itertools.combinations(range(N), late):
            decoder = make_decoder(matrix, scheme=scheme)
            for j, answer in answers.items():
                if j not in stragglers:
                    decoder.add(j, answer.coded)
            if not decoder.decodable:
                continue
            decoded = from_ordinals(decoder.decode(), torch.float32)
            theta_new, opt_new = split_rows(decoded, program.theta_size)
            error = state_error(AgentUpdate(theta_new, opt_new), expected)
            assert error <= 1e-6, (name, stragglers, error)
            checked += 1
    return checked


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_decodable_straggler_pattern_recovers_the_centralized_update(name: str) -> None:
    program = LinearProgram(M)
    assert all_patterns(program, linear_batch(program), name) > 0


@pytest.mark.parametrize("critic", ["joint", "local"])
@pytest.mark.parametrize("name", ["mds", "ldpc"])
def test_every_decodable_pattern_recovers_the_centralized_maddpg_update(
    name: str, critic: str
) -> None:
    program, batch = maddpg_program(M, critic=critic)
    assert all_patterns(program, batch, name) > 0


@pytest.mark.parametrize("name", ["mds", "ldpc", "replication", "uncoded"])
def test_simulated_rounds_track_the_centralized_run(name: str) -> None:
    program = LinearProgram(M)
    scheme, matrix = scheme_matrix(name)
    stragglers = StragglerModel(count=2, delay_s=1.0, seed=3)
    controller = CodedController(
        program, matrix, None, scheme=scheme, stragglers=stragglers, clock="simulated"
    )
    theta, opt_state = program.init_state(0)
    reference = AgentUpdate(theta, opt_state)
    for round_index in range(6):
        batch = linear_batch(program, seed=round_index)
        seed = derive_seed(0, round_index)
        coded, log = controller.update(theta, opt_state, batch, round_index, seed=seed)
        reference_stats = centralized(program, reference.theta, reference.opt_state, batch, seed)
        assert state_error(coded, reference_stats) <= 1e-6
        for stat in ("loss", "grad_norm"):  # reported by the learners, no forward pass here
            assert coded.stats[stat].shape == (M,)
            assert torch.allclose(coded.stats[stat], reference_stats.stats[stat], rtol=1e-6)
        assert coded.stats["joint_loss"].dim() == 0  # a joint scalar comes through as it is
        # Not bit-equal: the states it is computed from may differ in their last bits where BLAS
        # rounds a learner's smaller batch of agents differently from the joint call.
        assert torch.allclose(
            coded.stats["joint_loss"], reference_stats.stats["joint_loss"], rtol=1e-6
        )
        theta, opt_state, reference = coded.theta, coded.opt_state, reference_stats
        assert log.round_s >= log.decode_s > 0
        # The round ends on the virtual clock: a straggler is only waited for when it is needed.
        late_used = set(log.learners_used) & set(log.stragglers)
        assert (log.wait_s >= 1.0) == bool(late_used)
    assert torch.equal(opt_state[:, -1], torch.full((M,), 6.0))  # Adam's step count, exactly


class CountingProgram(LinearProgram):
    """The linear test program, counting the agent sets it is asked to update."""

    def __init__(self, num_agents: int) -> None:
        super().__init__(num_agents)
        self.calls: list[tuple[int, ...]] = []

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        self.calls.append(tuple(agents))
        return super().update(theta_all, opt_state, batch, agents, seed)


@pytest.mark.parametrize("name", ["mds", "replication", "ldpc"])
def test_the_simulated_clock_updates_each_distinct_set_of_agents_once(name: str) -> None:
    # An MDS learner holds every agent: N learners would compute the same update N times.
    program = CountingProgram(M)
    scheme, matrix = scheme_matrix(name)
    controller = CodedController(program, matrix, None, scheme=scheme, clock="simulated")
    theta, opt_state = program.init_state(0)
    batch, seed = linear_batch(program), derive_seed(0, 0)
    coded, log = controller.update(theta, opt_state, batch, 0, seed=seed)
    supports = {tuple(int(i) for i in np.flatnonzero(row)) for row in matrix if row.any()}
    assert len(program.calls) == len(set(program.calls)) == len(supports)
    if name == "mds":
        assert program.calls == [tuple(range(M))]
    # Every learner that answered is charged a compute time; the decoded state is the centralized one.
    assert all(log.compute_s[j] > 0 for j in log.compute_s)
    assert state_error(coded, centralized(program, theta, opt_state, batch, seed)) <= 1e-6


def test_mds_ignores_up_to_n_minus_m_stragglers_while_uncoded_pays() -> None:
    program = LinearProgram(M)
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
        _, log = controller.update(
            *program.init_state(0), linear_batch(program), 0, seed=derive_seed(0, 0)
        )
        timings[name] = log.round_s
    assert timings["mds"] < 5.0 <= timings["uncoded"]


def test_matrix_must_match_the_agents() -> None:
    with pytest.raises(UserError, match="columns"):
        CodedController(LinearProgram(3), np.eye(4), None, clock="simulated")
    with pytest.raises(UserError, match="clock"):
        CodedController(LinearProgram(4), np.eye(4), None, clock="lunar")


def test_state_rows_must_share_a_dtype() -> None:
    with pytest.raises(TypeError, match="one dtype"):
        state_rows(torch.zeros(2, 3), torch.zeros(2, 1, dtype=torch.float64))
    with pytest.raises(TypeError, match="one dtype"):  # what a learner's update returns, too
        check_one_dtype(torch.zeros(2, 3), torch.zeros(2, 1, dtype=torch.float64))
    assert everyone(LinearProgram(2)) == [0, 1]
