"""Every seed marlplug derives, from the config's ``seed`` and a few integers (update, round, agent).

One rule for all of them: a derived seed lies in ``[0, MAX_SEED]``, the range every consumer
accepts (``numpy.random.seed`` and VMAS take at most 32 bits, gymnasium refuses negatives), so the
config's seed range is also the range of every seed passed on.
"""

from __future__ import annotations

#: Largest seed a config may give and any derived seed takes: numpy's legacy ``np.random.seed`` (which
#: VMAS calls) accepts ``0 <= seed < 2**32``; torch and gymnasium accept at least that range.
MAX_SEED = 2**32 - 1


def derive_seed(seed: int, *parts: int) -> int:
    """A seed in ``[0, MAX_SEED]`` for ``(seed, *parts)``, e.g. ``(seed, update index)``.

    Built with numpy's ``SeedSequence`` (a hash designed for this): nearby inputs give unrelated
    seeds, and the result is the same on every machine.

    >>> derive_seed(0, 3) == derive_seed(0, 3) != derive_seed(0, 4)
    True
    >>> 0 <= derive_seed(MAX_SEED, 2**40, 7) <= MAX_SEED
    True
    """
    # Imported here: ``marlplug.config`` imports this module, and ``import marlplug`` stays numpy-free.
    import numpy as np

    if seed < 0 or any(part < 0 for part in parts):
        raise ValueError(f"seeds and their parts must be non-negative, got {(seed, *parts)}")
    return int(np.random.SeedSequence([seed, *parts]).generate_state(1)[0])


def agent_seed(seed: int, round_index: int, agent: int, *, salt: int = 0) -> int:
    """The seed of agent ``agent``'s update in round ``round_index``: the same on every learner.

    >>> agent_seed(0, 3, 1) == agent_seed(0, 3, 1) != agent_seed(0, 3, 2)
    True
    """
    return derive_seed(seed, salt, round_index, agent)
