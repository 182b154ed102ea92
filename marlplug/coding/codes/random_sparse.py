"""``random_sparse``: Gaussian entries, each kept with probability p_m, resampled until rank M."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from marlplug.coding.scheme import CodingScheme, InvalidCodeError
from marlplug.config import Options as ComponentOptions


class RandomSparseCode(CodingScheme):
    """The paper's random sparse code: ``C[j,i] ~ N(0,1)`` with probability ``p_m``, else 0.

    A draw is kept once it has rank M and no all-zero row; otherwise the next draw from the same
    seeded stream is tried, so a seed always gives the same matrix. With ``p_m = 0.8`` it is about as
    dense (and as straggler-tolerant) as ``mds``.

    Examples:
        >>> C = RandomSparseCode(p_m=0.5).assignment_matrix(3, 5, seed=1)
        >>> C.shape, np.linalg.matrix_rank(C)
        ((5, 3), np.int64(3))
    """

    name = "random_sparse"

    class Options(ComponentOptions):
        """Options of ``random_sparse``."""

        p_m: float = Field(0.8, gt=0.0, le=1.0, description="Probability that an entry is nonzero.")
        max_attempts: int = Field(1000, ge=1, description="Draws to try before giving up.")

    options: Options

    def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        shape = (num_learners, num_agents)
        for _ in range(self.options.max_attempts):
            matrix = rng.standard_normal(shape) * (rng.random(shape) < self.options.p_m)
            if matrix.any(axis=1).all() and np.linalg.matrix_rank(matrix) == num_agents:
                return matrix
        raise InvalidCodeError(
            f"{self.describe()} with M={num_agents} agents, N={num_learners} learners: no draw of "
            f"{self.options.max_attempts} had rank M and no empty row; raise p_m"
        )
