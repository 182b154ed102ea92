"""What one coded round did (:class:`RoundLog`: who answered when, what was waited for and decoded)
and what its learners reported (:func:`merge_stats`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from marlplug.distributed.learner import LearnerAnswer

#: The keys of :meth:`RoundLog.as_row`, in order: the header of a rounds log.
ROUND_ROW_COLUMNS = (
    "round",
    "clock",
    "round_s",
    "wait_s",
    "decode_s",
    "compute_s_max",
    "learners_used",
    "stragglers",
    "failures",
    "redispatched_agents",
)


@dataclass
class RoundLog:
    """What happened in one coded round (all times in seconds; virtual ones in simulated mode)."""

    round_index: int
    clock: str
    stragglers: list[int]
    learners_used: list[int]
    arrivals: dict[int, float]
    compute_s: dict[int, float]
    wait_s: float
    decode_s: float
    round_s: float
    failures: list[str] = field(default_factory=list)
    redispatched_agents: list[int] = field(default_factory=list)
    restarted: list[int] = field(default_factory=list)

    def as_row(self) -> dict[str, Any]:
        """A flat record for CSV/JSON logs, keyed by :data:`ROUND_ROW_COLUMNS`."""
        return {
            "round": self.round_index,
            "clock": self.clock,
            "round_s": self.round_s,
            "wait_s": self.wait_s,
            "decode_s": self.decode_s,
            "compute_s_max": max(self.compute_s.values(), default=0.0),
            "learners_used": " ".join(map(str, self.learners_used)),
            "stragglers": " ".join(map(str, self.stragglers)),
            "failures": len(self.failures),
            "redispatched_agents": " ".join(map(str, self.redispatched_agents)),
        }


def merge_stats(answers: Sequence[LearnerAnswer], num_agents: int) -> dict[str, torch.Tensor]:
    """The round's statistics from its answers: each per-agent statistic as an ``[M]`` tensor, each
    agent's value from the first answer that holds the agent, and each joint scalar (0-d) from the
    first answer that has it.

    Every learner that holds an agent computed the same update for it, so any of them may report
    it; an agent no answer reports a statistic for gets NaN there.

    Examples:
        >>> import torch
        >>> answers = [LearnerAnswer(torch.zeros(1), [1], {"loss": torch.tensor([0.5])}),
        ...            LearnerAnswer(torch.zeros(1), [0, 1], {"loss": torch.tensor([0.25, 0.5]),
        ...                                                   "joint": torch.tensor(0.75)})]
        >>> stats = merge_stats(answers, 2)
        >>> stats["loss"].tolist(), stats["joint"].item()
        ([0.25, 0.5], 0.75)
    """
    merged: dict[str, torch.Tensor] = {}
    filled: dict[str, set[int]] = {}
    for answer in answers:
        for name, values in answer.stats.items():
            if values.dim() == 0:
                merged.setdefault(name, values)
                continue
            # Floats as they come; counts and flags as float64, which holds them exactly, and NaN.
            dtype = values.dtype if values.is_floating_point() else torch.float64
            target = merged.setdefault(name, torch.full((num_agents,), float("nan"), dtype=dtype))
            done = filled.setdefault(name, set())
            for position, agent in enumerate(answer.agents):
                if agent not in done:
                    target[agent] = values[position]
                    done.add(agent)
    return merged
