"""Codes with one agent per learner: ``uncoded`` (extra learners idle) and ``replication``."""

from __future__ import annotations

import numpy as np

from marlplug.coding.scheme import CodingScheme


class UncodedScheme(CodingScheme):
    """The paper's uncoded system: learner i updates agent i; learners M..N-1 stay idle.

    Fastest with no stragglers (density 1 agent per active learner) and stalls on any straggler
    among the first M learners.

    Examples:
        >>> UncodedScheme().assignment_matrix(2, 3).tolist()
        [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    """

    name = "uncoded"
    allows_idle_learners = True

    def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
        return np.eye(num_learners, num_agents)


class ReplicationCode(CodingScheme):
    """Learner j updates agent ``j mod M``: the extra learners replicate agents round-robin.

    Decodable if and only if every agent keeps at least one answering replica. Cheap (one agent per
    learner) but tolerates no straggler at all when N < 2M.

    Examples:
        >>> ReplicationCode().assignment_matrix(2, 3).tolist()
        [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    """

    name = "replication"

    def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
        matrix = np.zeros((num_learners, num_agents))
        learners = np.arange(num_learners)
        matrix[learners, learners % num_agents] = 1.0
        return matrix
