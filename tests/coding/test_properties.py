"""Property-based tests (hypothesis): every registered code decodes every decodable straggler set."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from marlplug.coding import (
    InvalidCodeError,
    LDPCCode,
    LeastSquaresDecoder,
    PeelingDecoder,
    ReplicationCode,
    make_decoder,
    peeling_schedule,
)
from marlplug.plugins import get_plugin_manager
from marlplug.testing.codes import MAX_RELATIVE_ERROR

CODES = get_plugin_manager().registry("code")
SIZES = [(3, 5), (4, 7), (8, 15), (10, 15), (6, 12)]
PROPERTY_SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


def matrix_or_reject(
    name: str, num_agents: int, num_learners: int, seed: int
) -> tuple[object, np.ndarray]:
    scheme = CODES[name]()
    try:
        return scheme, scheme.assignment_matrix(num_agents, num_learners, seed)
    except InvalidCodeError:  # e.g. no LDPC code of that dimension exists
        reject()


def random_theta(num_agents: int, seed: int) -> torch.Tensor:
    return torch.as_tensor(np.random.default_rng(seed).standard_normal((num_agents, 11)))


@pytest.mark.parametrize("name", sorted(CODES))
@PROPERTY_SETTINGS
@given(data=st.data())
def test_every_decodable_straggler_set_recovers_theta(name: str, data: st.DataObject) -> None:
    num_agents, num_learners = data.draw(st.sampled_from(SIZES), label="(M, N)")
    seed = data.draw(st.integers(0, 3), label="seed")
    scheme, matrix = matrix_or_reject(name, num_agents, num_learners, seed)
    stragglers = data.draw(
        st.sets(st.integers(0, num_learners - 1), max_size=num_learners - num_agents),
        label="stragglers",
    )
    arrival = data.draw(
        st.permutations(sorted(set(range(num_learners)) - stragglers)), label="arrival"
    )
    theta = random_theta(num_agents, seed)
    results = torch.as_tensor(matrix) @ theta
    decoder = make_decoder(matrix, scheme=scheme)
    for learner in arrival:
        decoder.add(learner, results[learner])
    if decoder.decodable:
        error = float((decoder.decode() - theta).norm() / theta.norm())
        assert error <= MAX_RELATIVE_ERROR


@PROPERTY_SETTINGS
@given(
    sizes=st.sampled_from(SIZES),
    survivors=st.lists(st.booleans(), min_size=15, max_size=15),
)
def test_replication_decodes_iff_every_agent_keeps_a_replica(
    sizes: tuple[int, int], survivors: list[bool]
) -> None:
    num_agents, num_learners = sizes
    matrix = ReplicationCode().assignment_matrix(num_agents, num_learners)
    rows = [j for j in range(num_learners) if survivors[j]]
    covered = {j % num_agents for j in rows}
    assert make_decoder(matrix).can_decode(rows) == (covered == set(range(num_agents)))


@PROPERTY_SETTINGS
@given(
    num_agents=st.sampled_from([8, 10]),
    seed=st.integers(0, 5),
    order=st.permutations(range(15)),
    received=st.integers(8, 15),
)
def test_peeling_and_least_squares_agree(
    num_agents: int, seed: int, order: list[int], received: int
) -> None:
    matrix = LDPCCode().assignment_matrix(num_agents, 15)
    rows = order[:received]
    if peeling_schedule(matrix, rows) is None:
        return
    theta = random_theta(num_agents, seed)
    results = torch.as_tensor(matrix) @ theta
    peeling, least_squares = PeelingDecoder(matrix), LeastSquaresDecoder(matrix)
    for learner in rows:
        peeling.add(learner, results[learner])
        least_squares.add(learner, results[learner])
    assert peeling.peels and least_squares.decodable
    peeled, solved = peeling.decode(), least_squares.decode()
    assert float((peeled - solved).norm() / theta.norm()) <= MAX_RELATIVE_ERROR
    assert float((peeled - theta).norm() / theta.norm()) <= MAX_RELATIVE_ERROR


def test_peeling_succeeds_on_many_ldpc_straggler_sets() -> None:
    # Guards the test above against passing vacuously.
    matrix = LDPCCode().assignment_matrix(8, 15)
    rng = np.random.default_rng(0)
    peeled = sum(
        peeling_schedule(matrix, rng.permutation(15)[:13].tolist()) is not None for _ in range(100)
    )
    assert peeled > 50
