"""A run's periodic evaluations (``train.eval_every``): one :class:`EvaluationPoint` per evaluation,
with its metric names and its plain form for checkpoints."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

#: Metric names (CSV files, TensorBoard tags) of an evaluation: the mean and std over episodes of
#: the team return, and the oracle-normalized score where the scenario has a scripted policy.
EVAL_RETURN = "eval_return"
EVAL_RETURN_STD = "eval_return_std"
EVAL_SCORE = "eval_score"


@dataclass(frozen=True)
class EvaluationPoint:
    """One evaluation of the policy during training: deterministic actions on fixed episodes.

    Examples:
        >>> point = EvaluationPoint(update=10, frames=500, mean=-60.0, std=5.0, episodes=20, score=0.3)
        >>> point.as_metrics()
        {'eval_return': -60.0, 'eval_return_std': 5.0, 'eval_score': 0.3}
        >>> point.describe()
        '-60.000 ± 5.000 (20 deterministic episodes after update 10; oracle-normalized score 0.30)'
        >>> EvaluationPoint(update=10, frames=500, mean=-60.0, std=5.0, episodes=20, backend="mpe").describe()
        '-60.000 ± 5.000 (20 deterministic mpe episodes after update 10)'
    """

    update: int
    """Updates done when it ran (its metrics are logged at this step)."""
    frames: int
    """Training frames at that point."""
    mean: float
    """Team return (summed over agents), mean over episodes."""
    std: float
    """Population std of the team return over episodes."""
    episodes: int
    score: float | None = None
    """``(mean - random) / (scripted - random)``; ``None``: the scenario has no scripted policy."""
    backend: str | None = None
    """The env backend the episodes ran on (``None``: not recorded, a checkpoint of an earlier
    marlplug)."""

    def as_metrics(self) -> dict[str, float]:
        """The logged scalars (no score where there is none)."""
        metrics = {EVAL_RETURN: self.mean, EVAL_RETURN_STD: self.std}
        if self.score is not None:
            metrics[EVAL_SCORE] = self.score
        return metrics

    def describe(self) -> str:
        """One line for the end-of-run summary."""
        on = f"{self.backend} " if self.backend else ""
        text = (
            f"{self.mean:.3f} ± {self.std:.3f} ({self.episodes} deterministic {on}episodes after "
            f"update {self.update}"
        )
        if self.score is not None and math.isfinite(self.score):
            text += f"; oracle-normalized score {self.score:.2f}"
        return text + ")"


def evaluations_for_checkpoint(points: Iterable[EvaluationPoint]) -> list[dict[str, Any]]:
    """Plain dicts, so a checkpoint does not depend on this module's class names."""
    return [asdict(point) for point in points]


def evaluations_from_checkpoint(entries: Iterable[Mapping[str, Any]]) -> list[EvaluationPoint]:
    """The evaluations a checkpoint stored (:func:`evaluations_for_checkpoint`).

    Examples:
        >>> point = EvaluationPoint(update=1, frames=2, mean=-3.0, std=0.0, episodes=1)
        >>> evaluations_from_checkpoint(evaluations_for_checkpoint([point])) == [point]
        True
    """
    return [EvaluationPoint(**dict(entry)) for entry in entries]
