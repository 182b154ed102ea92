"""Decoded states are exact: float32 states of every magnitude (Adam moments: 0, 1e-30 ... 1e3) come back
bit for bit from every decodable straggler set of every well-conditioned built-in code, and the
re-dispatch choice always makes a round decodable."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from marlplug.coding import InvalidCodeError, make_decoder
from marlplug.coding.completion import completing_agents
from marlplug.coding.conditioning import worst_condition
from marlplug.coding.decoding import rows_condition
from marlplug.coding.exact import BLOCK_VALUES, from_ordinals, to_ordinals
from marlplug.plugins import get_plugin_manager

CODES = get_plugin_manager().registry("code")
M, N = 4, 7


def wide_states(num_agents: int, size: int, seed: int) -> torch.Tensor:
    """Float32 states whose values at one position differ by up to 60 orders of magnitude."""
    generator = torch.Generator().manual_seed(seed)
    magnitude = 10.0 ** torch.randint(-30, 4, (num_agents, size), generator=generator)
    states = torch.randn(num_agents, size, generator=generator) * magnitude
    states[:, ::7] = 0.0  # Adam moments of parameters that never got a gradient
    states[0, 1::5] = -states[0, 1::5].abs()
    return states.to(torch.float32)


def coded_answers(matrix: np.ndarray, states: torch.Tensor) -> dict[int, torch.Tensor]:
    """What learners return: ``y_j = Σ_i C[j, i] · ordinals_i`` in float64, as learner_compute does."""
    ordinals = to_ordinals(states)
    return {
        j: torch.as_tensor(matrix[j, np.flatnonzero(matrix[j])])
        @ ordinals[np.flatnonzero(matrix[j])]
        for j in range(matrix.shape[0])
        if matrix[j].any()
    }


@pytest.mark.parametrize("name", sorted(CODES))
def test_every_decodable_set_of_a_well_conditioned_code_decodes_bit_for_bit(name: str) -> None:
    scheme = CODES[name]()
    for num_agents, num_learners in [(M, N), (8, 15)]:  # LDPC has no code of dimension 4 of 7
        try:
            matrix = scheme.assignment_matrix(num_agents, num_learners, 0)
            break
        except InvalidCodeError:
            continue
    if worst_condition(matrix).worst > 1e5:
        pytest.skip(f"{name} at {matrix.shape} is too ill-conditioned for exact decoding")
    states = wide_states(num_agents, 500, seed=1)
    answers = coded_answers(matrix, states)
    checked = 0
    for late in range(min(num_learners - num_agents, 3) + 1):
        for missing in itertools.combinations(range(num_learners), late):
            decoder = make_decoder(matrix, scheme=scheme)
            for j, answer in answers.items():
                if j not in missing:
                    decoder.add(j, answer)
            if decoder.decodable:
                decoded = from_ordinals(decoder.decode(), torch.float32)
                assert torch.equal(decoded, states), (name, missing)
                checked += 1
    assert checked > 0


def test_ordinals_follow_their_definition_for_every_bit_pattern_across_blocks() -> None:
    # Random int32 patterns (NaNs, infinities and subnormals included) and the edges, in a state
    # wider than one conversion block, against the definition written with plain integers.
    generator = torch.Generator().manual_seed(0)
    edges = torch.tensor(
        [0, -(2**31), 2**31 - 1, -1, 1, 0x7F800000, -0x00800000], dtype=torch.int32
    )
    size = 2 * BLOCK_VALUES + 123
    random = torch.randint(-(2**31), 2**31 - 1, (size - len(edges),), generator=generator)
    bits = torch.cat([edges, random.to(torch.int32)]).reshape(1, size)
    states = bits.view(torch.float32)
    wide = bits.to(torch.int64)
    expected = torch.where(wide < 0, -(wide + 2**31), wide)  # minus the magnitude bits below +0
    ordinals = to_ordinals(states)
    assert ordinals.dtype == torch.float64
    assert torch.equal(ordinals, expected.to(torch.float64))
    split = BLOCK_VALUES + 7  # as a learner converts its parameter and optimizer-state rows
    assert torch.equal(to_ordinals(states[:, :split], states[:, split:]), ordinals)
    back = from_ordinals(ordinals, torch.float32).view(torch.int32)
    assert torch.equal(back, torch.where(bits == -(2**31), 0, bits))  # -0.0 comes back as +0.0
    nearest = from_ordinals(ordinals + 0.4, torch.float32).view(torch.int32)  # rounds to nearest
    assert torch.equal(nearest, back)


def test_replicas_a_few_ulps_apart_decode_to_a_value_between_them() -> None:
    # Some CPUs pick other BLAS kernels per batch shape: replicas of one update may differ in the
    # last bits. Ordinals are monotone, so the decode stays within those bits, whatever the sign.
    matrix = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 2.0]])
    states = torch.tensor([[1e-20, -3.0, 0.0], [5.0, -1e-30, 2.0]], dtype=torch.float32)
    nudged = torch.nextafter(states, torch.full_like(states, float("inf")))
    answers = coded_answers(matrix, states)
    answers[3] = coded_answers(matrix, nudged)[3]  # one learner's replica is one ulp higher
    decoder = make_decoder(matrix)
    for j, answer in answers.items():
        decoder.add(j, answer)
    decoded = from_ordinals(decoder.decode(), torch.float32)
    assert torch.all((decoded >= states) & (decoded <= nudged))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    num_agents=st.integers(1, 6),
    extra=st.integers(0, 5),
    seed=st.integers(0, 10_000),
    received_fraction=st.floats(0.0, 1.0),
    spread=st.sampled_from([1.0, 1e3, 1e8]),
)
def test_completing_agents_always_makes_the_round_decodable(
    num_agents: int, extra: int, seed: int, received_fraction: float, spread: float
) -> None:
    rng = np.random.default_rng(seed)
    num_learners = num_agents + extra
    # Rows of very different scales make ill-conditioned but full-rank subsets likely.
    matrix = rng.standard_normal((num_learners, num_agents)) * spread ** rng.random(num_agents)
    received = sorted(
        rng.choice(num_learners, size=int(received_fraction * num_learners), replace=False).tolist()
    )
    agents = completing_agents(matrix, received, max_condition=1e6)
    stacked = np.vstack([matrix[received], np.eye(num_agents)[agents]])
    condition = rows_condition(stacked, list(range(len(stacked))))
    if len(agents) < num_agents:
        assert condition <= 1e6
    else:  # every agent alone: [C_rows; I] is within sqrt(||C_rows||^2 + 1), which may exceed 1e6
        norm = np.linalg.norm(matrix[received], 2) if received else 0.0
        assert condition <= max(1e6, np.sqrt(norm**2 + 1) * (1 + 1e-9))
    if agents:  # none is chosen when the answers already decode
        assert rows_condition(matrix, received) > 1e6
