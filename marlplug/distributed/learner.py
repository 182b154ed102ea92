"""What one learner computes in a round: ``y_j = Σ_i C[j, i] · U_i(θ, batch, seed(round, i))``.

The same function runs in a local worker process, in a Ray actor and in the simulated clock, so every
backend returns the same bits. ``y_j`` combines the states' float32 ordinals (:mod:`marlplug.coding.exact`)
in float64: the controller decodes them and rounds to the nearest integers, which gives every agent's
state back bit for bit (for any well-conditioned set of rows), whatever the values' magnitudes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from tensordict import TensorDictBase

from marlplug.coding.exact import to_ordinals
from marlplug.seeding import agent_seed


class UpdateProgram(Protocol):
    """A learner algorithm bound to its agents: the pure per-agent update over flat state vectors."""

    num_agents: int
    state_size: int

    def update(
        self,
        theta_all: torch.Tensor,
        agents: Sequence[int],
        batch: TensorDictBase,
        seeds: Sequence[int],
    ) -> torch.Tensor:
        """``[len(agents), D]``: ``U_i(theta_all, theta_all[i], batch, seeds[k])`` for ``i = agents[k]``."""
        ...


@dataclass(frozen=True)
class LearnerResult:
    """One learner's answer for one round (or one re-dispatched task of a round)."""

    learner: int
    round_index: int
    task_id: int
    coded: torch.Tensor
    compute_s: float


def learner_compute(
    program: UpdateProgram,
    row: np.ndarray,
    theta_all: torch.Tensor,
    batch: TensorDictBase,
    *,
    round_index: int,
    seed: int,
) -> tuple[torch.Tensor, float]:
    """``(y_j, seconds)``: the coded combination of the updates of every agent with ``row[i] != 0``,
    as float64 ordinals (:func:`marlplug.coding.exact.to_ordinals`; decode with ``from_ordinals``).

    All of the learner's agents are updated in one vectorized call; agent ``i`` uses the seed for
    ``(seed, round_index, i)`` so every learner holding agent ``i`` computes the same ``θ'_i``.
    """
    start = time.perf_counter()
    agents = [int(i) for i in np.flatnonzero(row)]
    seeds = [agent_seed(seed, round_index, i) for i in agents]
    updated = program.update(theta_all, agents, batch, seeds)
    weights = torch.as_tensor(row[agents], dtype=torch.float64)
    coded = weights @ to_ordinals(updated)
    return coded, time.perf_counter() - start
