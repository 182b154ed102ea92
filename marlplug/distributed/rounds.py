"""What one coded round did: who answered when, what was waited for and decoded (:class:`RoundLog`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
