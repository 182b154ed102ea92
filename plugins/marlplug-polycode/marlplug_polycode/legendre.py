"""A third-party coding scheme for marlplug: a real MDS code from Legendre polynomials.

Learner j evaluates the orthonormal Legendre polynomials P_0..P_{M-1} at the j-th Gauss–Legendre node;
any M learners hold M distinct nodes, so any M answers decode.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import legendre
from pydantic import Field

import marlplug
from marlplug.coding import CodingScheme


class LegendreCode(CodingScheme):
    """``legendre``: C[j, i] = sqrt(2i + 1) · P_i(x_j) at the N Gauss–Legendre nodes x_j (a real MDS code).

    Deterministic and dense (every learner updates every agent). Its worst M-row subset is about as
    well conditioned as the Chebyshev construction (≈4e5 at N=15, M=8), so it decodes any M answers
    under marlplug's default condition limit.

    Examples:
        >>> LegendreCode().assignment_matrix(2, 3).round(3).tolist()
        [[1.0, -1.342], [1.0, 0.0], [1.0, 1.342]]
    """

    name = "legendre"

    class Options(marlplug.Options):
        """Options of ``legendre``."""

        scale: float = Field(
            1.0, gt=0, description="Multiplies every entry (conditioning unchanged)."
        )

    options: Options

    def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
        nodes, _ = legendre.leggauss(num_learners)
        normalization = np.sqrt(2 * np.arange(num_agents) + 1)
        return self.options.scale * legendre.legvander(nodes, num_agents - 1) * normalization
