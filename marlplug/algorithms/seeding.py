"""Seeds for per-agent randomness that every learner derives identically from ``(seed, round, agent)``."""

from __future__ import annotations

import numpy as np


def agent_seed(seed: int, round_index: int, agent: int, *, salt: int = 0) -> int:
    """The seed of agent ``agent``'s update in round ``round_index``: the same on every learner.

    >>> agent_seed(0, 3, 1) == agent_seed(0, 3, 1) != agent_seed(0, 3, 2)
    True
    """
    return int(np.random.SeedSequence([seed, salt, round_index, agent]).generate_state(1)[0])
