"""Example marlplug coding-scheme plugin: a cyclic code where learner j updates two neighbouring agents."""

from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import Field

import marlplug
from marlplug.coding import CodingScheme


class CyclicCode(CodingScheme):
    """Learner j updates agents ``j mod M`` (weight 1) and ``j+1 mod M`` (weight ``weight``).

    The first M rows form a circulant matrix with eigenvalues ``1 + weight·ω^k``, which never
    vanish for ``weight > 1``, so every learner's answer together always decodes (condition number
    at most ``(weight + 1) / (weight - 1)``). Each learner does twice the work of ``replication``.
    """

    name = "cyclic"

    class Options(marlplug.Options):
        weight: float = Field(2.0, gt=1.0, description="Weight of each learner's second agent.")

    def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
        matrix = np.zeros((num_learners, num_agents))
        rows = np.arange(num_learners)
        matrix[rows, rows % num_agents] = 1.0
        matrix[rows, (rows + 1) % num_agents] = self.options.weight
        return matrix


@marlplug.hookimpl
def marlplug_codes() -> Mapping[str, Any]:
    return {"cyclic": CyclicCode}
