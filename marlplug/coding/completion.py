"""Completing an undecodable round: which agents to compute alone so that the results in hand decode.

A round whose answers so far do not decode — too few independent rows (rank), or rows that are
independent but too ill-conditioned to decode accurately (condition) — is completed with one-agent
tasks (unit rows of the identity). :func:`completing_agents` picks them.
"""

from __future__ import annotations

import numpy as np

from marlplug.coding.decoding import rows_condition


def completing_agents(
    assignment_matrix: np.ndarray, received: list[int], *, max_condition: float
) -> list[int]:
    """Agents whose one-agent results, together with the rows ``received``, decode within
    ``max_condition``.

    First every agent the received rows do not determine (each raises the rank), then, greedily,
    the agent whose unit row lowers the condition number most, until the stacked rows are well
    conditioned. Adding every agent bounds the condition number: ``[C_rows; I]`` has every singular
    value at least 1, so its condition number is at most ``sqrt(||C_rows||² + 1)`` — within the limit
    for codes with entries of order one (every built-in code); a code with huge entries may still
    exceed it, and the round then fails with its one-line reason.

    Args:
        assignment_matrix: ``C``, ``(N, M)``.
        received: the rows (learners) heard from.
        max_condition: the decoder's limit.

    Returns:
        Sorted agent indices (empty when the received rows already decode).

    Examples:
        >>> C = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-9], [0.0, 1.0]])
        >>> completing_agents(C, [0], max_condition=1e6)       # rank 1: agent 0 or 1 is missing
        [0, 1]
        >>> completing_agents(C, [0, 1], max_condition=1e6)    # rank 2, but condition 4e9
        [0]
        >>> completing_agents(C, [0, 2], max_condition=1e6)
        []
    """
    matrix = np.asarray(assignment_matrix, dtype=np.float64)
    num_agents = matrix.shape[1]
    identity = np.eye(num_agents)
    rows = matrix[sorted(received)] if received else np.zeros((0, num_agents))
    rank = int(np.linalg.matrix_rank(rows)) if len(rows) else 0
    chosen = [
        agent
        for agent in range(num_agents)
        if np.linalg.matrix_rank(np.vstack([rows, identity[agent]])) > rank
    ]

    def condition(agents: list[int]) -> float:
        stacked = np.vstack([rows, identity[agents]])
        return rows_condition(stacked, list(range(len(stacked))))

    while condition(chosen) > max_condition and len(chosen) < num_agents:
        candidates = [agent for agent in range(num_agents) if agent not in chosen]
        chosen.append(min(candidates, key=lambda agent: (condition([*chosen, agent]), agent)))
    return sorted(chosen)
