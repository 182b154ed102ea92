"""What one learner computes in a round: ``y_j = Σ_i C[j, i] · [θ'_i | s'_i]`` for its row of ``C``.

The learner runs the algorithm's update (:class:`marlplug.algorithms.protocol.LearnerProgram`) once
for every agent of its row, with the round's seed, and codes each agent's new state row — ``θ'_i``
and the optimizer state ``s'_i`` side by side — as float32 ordinals combined in float64
(:mod:`marlplug.coding.exact`): the controller decodes them and rounds to the nearest integers, which
gives every agent's state back bit for bit for any well-conditioned set of answers. The update's
statistics (per agent, and joint scalars) are small and go back uncoded, so the controller reports them without running
any forward pass itself.

The same function runs in a local worker process, in a Ray actor and on the simulated clock, so every
backend returns the same bits.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from tensordict import TensorDictBase

from marlplug.algorithms.protocol import LearnerProgram
from marlplug.coding.exact import to_ordinals


@dataclass(frozen=True)
class LearnerAnswer:
    """One learner's answer to one task.

    Attributes:
        coded: ``[P + O]`` float64: ``Σ_i row[i] · ordinals([θ'_i | s'_i])``.
        agents: the agents of the row, in order.
        stats: the update's statistics (uncoded): ``[len(agents)]`` per-agent ones and 0-d joint
            scalars.
        compute_s: seconds the update and the coding took.
    """

    coded: torch.Tensor
    agents: list[int]
    stats: Mapping[str, torch.Tensor] = field(default_factory=dict)
    compute_s: float = 0.0


@dataclass(frozen=True)
class LearnerResult:
    """A learner's answer as a backend reports it, for one round (or one re-dispatched task)."""

    learner: int
    round_index: int
    task_id: int
    answer: LearnerAnswer


def state_rows(theta: torch.Tensor, opt_state: torch.Tensor) -> torch.Tensor:
    """``[M, P + O]``: each agent's ``θ`` row and optimizer-state row side by side (what is coded).

    Examples:
        >>> state_rows(torch.zeros(2, 3), torch.ones(2, 1)).tolist()
        [[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]]
    """
    check_one_dtype(theta, opt_state)
    return torch.cat([theta, opt_state], dim=1)


def check_one_dtype(theta: torch.Tensor, opt_state: torch.Tensor) -> None:
    """Raise ``TypeError`` unless a program's parameter and optimizer rows share one dtype."""
    if theta.dtype != opt_state.dtype:
        raise TypeError(
            f"theta is {theta.dtype} but opt_state is {opt_state.dtype}: a learner program's "
            "state rows must share one dtype (float32)"
        )


def split_rows(rows: torch.Tensor, theta_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(θ [M, P], opt_state [M, O])`` from :func:`state_rows`' ``[M, P + O]``."""
    return rows[:, :theta_size], rows[:, theta_size:]


def answer_stats(stats: Mapping[str, torch.Tensor], count: int) -> dict[str, torch.Tensor]:
    """The statistics a learner sends back, detached: per-agent ones (``[count]``) and joint scalars
    (0-d); anything else stays on the learner.

    A joint scalar must not depend on which agents share the update call (e.g. the loss of a
    forward pass over every agent), so that any learner's value is the round's value.
    """
    return {
        name: value.detach()
        for name, value in stats.items()
        if value.dim() == 0 or (value.dim() == 1 and value.shape[0] == count)
    }


@dataclass(frozen=True)
class AgentsUpdate:
    """One call of ``program.update`` for a set of agents, before any learner codes it.

    Attributes:
        agents: the agents updated, in order.
        ordinals: ``[len(agents), P + O]`` float64: each agent's new state row as float32 ordinals.
        stats: the update's statistics (:func:`answer_stats`).
        update_s: seconds the update and the conversion to ordinals took.
    """

    agents: list[int]
    ordinals: torch.Tensor
    stats: Mapping[str, torch.Tensor]
    update_s: float


def row_agents(row: np.ndarray) -> list[int]:
    """The agents a learner with assignment ``row`` updates (its non-zero columns).

    Examples:
        >>> row_agents(np.array([0.0, 2.0, 0.0, -1.0]))
        [1, 3]
    """
    return [int(i) for i in np.flatnonzero(row)]


def update_agents(
    program: LearnerProgram,
    agents: list[int],
    state: torch.Tensor,
    batch: TensorDictBase,
    *,
    seed: int,
) -> AgentsUpdate:
    """``program.update`` of ``agents`` in one call with the round's ``seed``, as ordinals ready to code.

    The program derives each agent's randomness from ``seed`` alone, so every learner holding the
    same agents computes the same bits: the simulated clock runs this once per distinct set.
    """
    start = time.perf_counter()
    theta_all, opt_state = split_rows(state, program.theta_size)
    update = program.update(theta_all, opt_state, batch, agents, seed)
    # Blocks side by side, not state_rows: a [32, 1.7M] temporary costs more in fresh pages than
    # the conversion itself.
    check_one_dtype(update.theta, update.opt_state)
    ordinals = to_ordinals(update.theta.detach(), update.opt_state.detach())
    stats = answer_stats(update.stats, len(agents))
    return AgentsUpdate(agents, ordinals, stats, time.perf_counter() - start)


def code_answer(row: np.ndarray, update: AgentsUpdate) -> LearnerAnswer:
    """Learner ``row``'s answer from its agents' update: ``Σ_i row[i] · ordinals_i``.

    ``compute_s`` is the update's time plus the coding's (timed here).
    """
    start = time.perf_counter()
    weights = torch.as_tensor(row[update.agents], dtype=torch.float64)
    coded = weights @ update.ordinals
    coding_s = time.perf_counter() - start
    return LearnerAnswer(coded, list(update.agents), update.stats, update.update_s + coding_s)


def learner_compute(
    program: LearnerProgram,
    row: np.ndarray,
    state: torch.Tensor,
    batch: TensorDictBase,
    *,
    seed: int,
) -> LearnerAnswer:
    """The coded update of every agent with ``row[i] != 0``, from ``state`` (:func:`state_rows`).

    All of the learner's agents are updated in one call of ``program.update`` with the round's
    ``seed`` (the program derives each agent's randomness from it), so every learner that holds
    agent ``i`` computes the same ``θ'_i``.

    Examples:
        >>> import numpy as np, torch
        >>> from tensordict import TensorDict
        >>> from marlplug.algorithms.protocol import AgentUpdate
        >>> class Halve:  # a toy program: θ' = θ / 2, no optimizer state
        ...     num_agents, theta_size, opt_state_size = 2, 1, 0
        ...     def update(self, theta_all, opt_state, batch, agents, seed):
        ...         return AgentUpdate(theta_all[agents] / 2, opt_state[agents],
        ...                            {"norm": theta_all[agents, 0].abs()})
        >>> answer = learner_compute(Halve(), np.array([1.0, 1.0]),
        ...     torch.tensor([[2.0], [4.0]]), TensorDict({}, batch_size=[]), seed=0)
        >>> answer.agents, answer.stats["norm"].tolist()
        ([0, 1], [2.0, 4.0])
    """
    update = update_agents(program, row_agents(row), state, batch, seed=seed)
    return code_answer(row, update)
