"""JointStats: what one update of the joint trainer did, per agent and shared."""

from __future__ import annotations

from dataclasses import dataclass, field

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
        mean_return: mean return of the episodes finished in the rollout (None if none finished).
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
        if self.mean_return is not None:
            out["mean_return"] = self.mean_return
        return out
