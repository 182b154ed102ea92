"""marlplug-polycode passes marlplug's coding-scheme contract, installed through its entry point."""

from __future__ import annotations

import numpy as np
from marlplug_polycode import LegendreCode

from marlplug.coding import make_decoder, worst_condition
from marlplug.testing import CodingSchemeContract


class TestLegendreContract(CodingSchemeContract):
    scheme_class = LegendreCode
    registered_name = "legendre"


def test_any_m_learners_decode_at_the_papers_sizes() -> None:
    for num_agents in (8, 10):
        matrix = LegendreCode().assignment_matrix(num_agents, 15)
        assert worst_condition(matrix).worst <= 1e6
        decoder = make_decoder(matrix)
        rng = np.random.default_rng(num_agents)
        for _ in range(50):
            assert decoder.can_decode(sorted(rng.permutation(15)[:num_agents].tolist()))
