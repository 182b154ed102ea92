"""What a run reports for each iteration: its record (:class:`IterationLog`), its ``rounds.csv``
rows (one per coded round, or one per iteration), its logged metrics (both returns, the timings, the
coded round's record, the learners' statistics), and why no update round has run yet."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from marlplug.distributed.rounds import RoundLog
from marlplug.runs.stats import RETURN_PER_AGENT, RETURN_TEAM, ReturnPoint

#: rounds.csv columns of every run: the iteration's (repeated on each of its coded rounds' rows).
ITERATION_COLUMNS = [
    "iteration",
    "env_steps",
    RETURN_PER_AGENT,
    RETURN_TEAM,
    "collect_s",
    "update_s",
]
#: The columns coded runs add (:func:`round_row`): the round's global index (``RoundLog.round_index``,
#: counted over the whole run) and its record (``RoundLog.as_row``, prefixed ``round_``).
ROUND_COLUMNS = [
    "round",
    "round_clock",
    "round_round_s",
    "round_wait_s",
    "round_decode_s",
    "round_compute_s_max",
    "round_learners_used",
    "round_stragglers",
    "round_failures",
    "round_redispatched_agents",
]


@dataclass
class IterationLog:
    """One training iteration: env steps (whole run), the mean team return of the episodes that
    ended in it (NaN: none), timings, its last coded round's record (``None``: centralized, or no
    round; ``round_logs`` has all of them), its number of rounds and the mean of the learners'
    statistics over its rounds."""

    iteration: int
    env_steps: int
    episode_return: float
    collect_s: float
    update_s: float
    round: RoundLog | None
    rounds: int = 0
    stats: dict[str, float] = field(default_factory=dict)
    round_logs: list[RoundLog] = field(default_factory=list)

    def as_row(self) -> dict[str, object]:
        """The iteration's own record (no round's: :func:`round_row`)."""
        return {
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "episode_return": self.episode_return,
            "collect_s": self.collect_s,
            "update_s": self.update_s,
        }


def round_row(round_log: RoundLog) -> dict[str, object]:
    """A coded round's :data:`ROUND_COLUMNS`: ``round`` (its index) and its record as ``round_*``."""
    record = round_log.as_row()
    return {"round": record.pop("round"), **{f"round_{k}": v for k, v in record.items()}}


def rounds_columns(*, coded: bool) -> list[str]:
    """The header of a run's ``rounds.csv`` (:func:`iteration_rows`)."""
    return ITERATION_COLUMNS + (ROUND_COLUMNS if coded else [])


def iteration_returns(log: IterationLog, num_agents: int) -> ReturnPoint | None:
    """The iteration's return per agent and for the team (the runner sums over agents)."""
    if math.isnan(log.episode_return):
        return None
    return ReturnPoint.from_team(
        frames=log.env_steps, team=log.episode_return, num_agents=num_agents
    )


def log_iteration(logger: Any, log: IterationLog, returns: ReturnPoint | None) -> None:
    """Log the iteration at step ``iteration + 1``: frames, timings, both returns, the program's
    statistics under their names (``total_loss``, ``agent_0/entropy``, ...) and, for a coded round,
    its record; in one ``log_metrics`` call (one W&B history row, one MLflow request)."""
    metrics: dict[str, float] = {
        "env_steps": float(log.env_steps),
        "collect_s": log.collect_s,
        "update_s": log.update_s,
        **(returns.as_metrics() if returns is not None else {}),
        **log.stats,
    }
    if log.round is not None:
        round_log = log.round
        metrics.update(
            {
                "round_s": round_log.round_s,
                "round_wait_s": round_log.wait_s,
                "round_decode_s": round_log.decode_s,
                "round_compute_s_max": max(round_log.compute_s.values(), default=0.0),
                "round_learners_used": float(len(round_log.learners_used)),
                "round_stragglers": float(len(round_log.stragglers)),
                "round_failures": float(len(round_log.failures)),
            }
        )
    logger.log_metrics(metrics, step=log.iteration + 1)


def iteration_rows(
    log: IterationLog, returns: ReturnPoint | None, *, coded: bool
) -> list[dict[str, object]]:
    """The iteration's ``rounds.csv`` rows: for a coded run one per round, in order, each with the
    iteration's columns (so every row says which update it belongs to) and the round's
    (:func:`round_row`); one row otherwise, the round columns left empty when a coded iteration ran
    no round (a replay buffer still filling up). Both returns stand in place of the log's sum."""
    row = {key: value for key, value in log.as_row().items() if key != "episode_return"}
    row.update(returns.as_metrics() if returns is not None else {})
    if not coded or not log.round_logs:
        return [row]
    return [{**row, **round_row(round_log)} for round_log in log.round_logs]
