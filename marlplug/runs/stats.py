"""JointStats: what one update of the joint trainer did, per agent and shared; ReturnPoint: the one
definition of an episode's return that every run reports (per agent and for the team)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

#: Metric names of the two returns (CSV files, TensorBoard tags, ``rounds.csv`` columns, summary).
RETURN_PER_AGENT = "return_per_agent"
RETURN_TEAM = "return_team"


class ReturnPoint(NamedTuple):
    """The mean return of the episodes that finished in one update (or iteration), two ways.

    An episode's return for the team is the sum of every agent's rewards over the episode (every
    agent of every group, adversaries included); per agent it is that sum divided by the number of
    agents. Both are averaged over the episodes that finished.

    Examples:
        >>> point = ReturnPoint.from_team(frames=100, team=-30.0, num_agents=3)
        >>> point.per_agent, point.as_metrics()
        (-10.0, {'return_per_agent': -10.0, 'return_team': -30.0})
    """

    frames: int
    per_agent: float
    team: float

    @classmethod
    def from_team(cls, *, frames: int, team: float, num_agents: int) -> ReturnPoint:
        """From the return summed over ``num_agents`` agents."""
        return cls(int(frames), float(team) / num_agents, float(team))

    @classmethod
    def from_per_agent(cls, *, frames: int, per_agent: float, num_agents: int) -> ReturnPoint:
        """From the return averaged over ``num_agents`` agents."""
        return cls(int(frames), float(per_agent), float(per_agent) * num_agents)

    def as_metrics(self) -> dict[str, float]:
        """``{return_per_agent: ..., return_team: ...}``, for loggers and CSV rows."""
        return {RETURN_PER_AGENT: self.per_agent, RETURN_TEAM: self.team}


def history_from_checkpoint(
    entries: Iterable[Sequence[float]], *, num_agents: int, legacy_is_team: bool
) -> list[ReturnPoint]:
    """The return history stored in a checkpoint (``(frames, per agent, team)`` triples).

    Checkpoints written before both returns were stored hold ``(frames, return)`` pairs: the mean
    over agents for joint PPO, the sum over agents for MADDPG (``legacy_is_team``).

    Examples:
        >>> history_from_checkpoint([(10, -6.0)], num_agents=3, legacy_is_team=True)
        [ReturnPoint(frames=10, per_agent=-2.0, team=-6.0)]
    """
    history = []
    for entry in entries:
        if len(entry) == 3:
            history.append(ReturnPoint(int(entry[0]), float(entry[1]), float(entry[2])))
        elif legacy_is_team:
            history.append(
                ReturnPoint.from_team(frames=int(entry[0]), team=entry[1], num_agents=num_agents)
            )
        else:
            history.append(
                ReturnPoint.from_per_agent(
                    frames=int(entry[0]), per_agent=entry[1], num_agents=num_agents
                )
            )
    return history


def history_for_checkpoint(history: Iterable[ReturnPoint]) -> list[tuple[int, float, float]]:
    """Plain tuples, so a checkpoint does not depend on this module's class names."""
    return [(int(p.frames), float(p.per_agent), float(p.team)) for p in history]


PER_AGENT_STATS = (
    "policy_loss",
    "value_loss",
    "entropy",
    "clip_fraction",
    "approx_kl",
    "explained_var",
    "grad_norm",
)


@dataclass
class JointStats:
    """Per-update statistics, averaged over the update's minibatch steps.

    Attributes:
        agent_names: agent names in the documented agent order.
        per_agent: stat name (see ``PER_AGENT_STATS``) -> one value per agent; ``grad_norm`` is the
            norm before clipping.
        aux_losses: aux loss name -> its mean value.
        aux_stats: ``"<aux>/<stat>"`` -> mean value (e.g. ``redundancy/dead_features``).
        total_loss: mean L_total.
        minibatch_steps: optimization steps taken.
        skipped_nonfinite: agent steps skipped because the gradient norm was not finite.
        nonfinite_terms: the loss terms that were not finite -> the agents they concern.
        nonfinite_agent_steps: agent steps with a non-finite loss term or gradient.
        mean_return: return per agent (:class:`ReturnPoint`) of the episodes finished in the
            rollout, averaged over them (None if none finished); logged as ``return_per_agent``
            and, times the number of agents, ``return_team``.
        frames: environment frames collected so far.

    Examples:
        >>> stats = JointStats(agent_names=["a", "b"])
        >>> stats.per_agent["policy_loss"] = [0.1, 0.2]
        >>> stats.flat()["a/policy_loss"]
        0.1
    """

    agent_names: list[str]
    per_agent: dict[str, list[float]] = field(default_factory=dict)
    aux_losses: dict[str, float] = field(default_factory=dict)
    aux_stats: dict[str, float] = field(default_factory=dict)
    total_loss: float = 0.0
    minibatch_steps: int = 0
    skipped_nonfinite: int = 0
    nonfinite_terms: dict[str, list[str]] = field(default_factory=dict)
    nonfinite_agent_steps: int = 0
    mean_return: float | None = None
    frames: int = 0

    @property
    def returns(self) -> ReturnPoint | None:
        """This update's return, per agent and for the team (None if no episode finished)."""
        if self.mean_return is None:
            return None
        return ReturnPoint.from_per_agent(
            frames=self.frames, per_agent=self.mean_return, num_agents=len(self.agent_names)
        )

    def flat(self) -> dict[str, float]:
        """Every number keyed by a metric name, for loggers."""
        out: dict[str, float] = {}
        for stat, values in self.per_agent.items():
            for name, value in zip(self.agent_names, values, strict=True):
                out[f"{name}/{stat}"] = value
        for name, value in self.aux_losses.items():
            out[f"loss_{name}"] = value
        for name, value in self.aux_stats.items():
            out[f"aux/{name}"] = value
        out["total_loss"] = self.total_loss
        out["minibatch_steps"] = float(self.minibatch_steps)
        out["skipped_nonfinite"] = float(self.skipped_nonfinite)
        out["frames"] = float(self.frames)
        if self.returns is not None:
            out.update(self.returns.as_metrics())
        return out
