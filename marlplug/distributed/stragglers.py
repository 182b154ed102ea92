"""Straggler models: which learners answer late in a round, and by how much.

``fixed`` is the paper's model (each round, ``count`` random learners delay their answer by ``delay_s``);
``random`` delays each learner independently with ``probability``. Only learners that have work (a
nonzero row of the assignment matrix) can straggle: an idle learner sends nothing to be late with.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from marlplug.config import StragglerSection
from marlplug.errors import ConfigError


class StragglerModel:
    """Draws each round's delays from its own seeded stream (the same seed gives the same stragglers).

    Args:
        model: ``"fixed"`` or ``"random"``.
        count: stragglers per round for ``fixed``.
        probability: per-learner straggling probability for ``random``.
        delay_s: how long a straggler delays its answer, in seconds.
        seed: seeds the draws.

    Examples:
        >>> model = StragglerModel(model="fixed", count=2, delay_s=0.25, seed=0)
        >>> delays = model.delays(range(5))
        >>> sorted(delays.values())
        [0.0, 0.0, 0.0, 0.25, 0.25]
    """

    def __init__(
        self,
        *,
        model: str = "fixed",
        count: int = 0,
        probability: float = 0.0,
        delay_s: float = 0.0,
        seed: int = 0,
    ) -> None:
        if model not in {"fixed", "random"}:
            raise ConfigError(
                f"coding.stragglers.model: unknown straggler model '{model}'; available: fixed, random"
            )
        self.model = model
        self.count = count
        self.probability = probability
        self.delay_s = delay_s
        self._rng = np.random.default_rng(np.random.SeedSequence([seed, 7]))

    @classmethod
    def from_config(cls, section: StragglerSection, *, seed: int) -> StragglerModel:
        """Build from a config's ``coding.stragglers`` section."""
        return cls(**section.model_dump(), seed=seed)

    def delays(self, active_learners: Sequence[int] | range) -> dict[int, float]:
        """``{learner: delay_s}`` for this round, for every learner in ``active_learners``."""
        active = list(active_learners)
        late: set[int] = set()
        if self.model == "fixed":
            count = min(self.count, len(active))
            late = (
                {int(j) for j in self._rng.choice(active, size=count, replace=False)}
                if count
                else set()
            )
        else:
            draws = self._rng.random(len(active))
            late = {j for j, u in zip(active, draws, strict=True) if u < self.probability}
        return {j: (self.delay_s if j in late else 0.0) for j in active}
