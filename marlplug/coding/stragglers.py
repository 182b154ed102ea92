"""Stragglers and the round time they cause: which learners answer late, and when the controller first
holds a decodable set of answers.

One straggler model (:class:`StragglerModel`) serves the runtime's rounds (its own seeded stream,
:meth:`StragglerModel.delays`) and the Monte Carlo analysis of ``marlplug codes analyze``
(:meth:`StragglerModel.draw` with the caller's generator). One rule ends a round,
:func:`first_decodable`: answers are taken in order of arrival until they decode; the simulated
clock of the controller, the analysis and the benchmarks all use it.

``fixed`` is the paper's model (each round ``count`` learners, chosen uniformly, answer ``delay_s``
late); ``random`` delays each learner independently with ``probability``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from marlplug.config import StragglerSection
from marlplug.errors import ConfigError
from marlplug.seeding import derive_seed

#: The models :class:`StragglerModel` knows.
STRAGGLER_MODELS = ("fixed", "random")

#: Mixed into the run's seed for the straggler stream, so it is unrelated to every other seed drawn
#: from the run's seed (rounds, agents, envs).
STRAGGLER_STREAM = 7


@dataclass
class StragglerModel:
    """Which learners straggle in a round, and by how much.

    Args:
        model: ``"fixed"`` or ``"random"``.
        count: stragglers per round for ``fixed`` (at most the learners that can straggle).
        probability: per-learner straggling probability for ``random``.
        delay_s: how long a straggler delays its answer, in seconds.
        seed: seeds :meth:`delays`' stream (the same seed gives the same stragglers).

    Examples:
        >>> model = StragglerModel(model="fixed", count=2, delay_s=0.25, seed=0)
        >>> sorted(model.delays(range(5)).values())
        [0.0, 0.0, 0.0, 0.25, 0.25]
        >>> StragglerModel(model="random", probability=1.0, delay_s=0.5).draw(
        ...     range(3), np.random.default_rng(0))
        array([0.5, 0.5, 0.5])
    """

    model: str = "fixed"
    count: int = 0
    probability: float = 0.0
    delay_s: float = 0.0
    seed: int = 0
    _rng: np.random.Generator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.model not in STRAGGLER_MODELS:
            raise ConfigError(
                f"coding.stragglers.model: unknown straggler model '{self.model}'; "
                f"available: {', '.join(STRAGGLER_MODELS)}"
            )
        self._rng = np.random.default_rng(derive_seed(self.seed, STRAGGLER_STREAM))

    @classmethod
    def from_config(cls, section: StragglerSection, *, seed: int) -> StragglerModel:
        """Build from a config's ``coding.stragglers`` section."""
        return cls(**section.model_dump(), seed=seed)

    def draw(self, learners: Sequence[int] | range, rng: np.random.Generator) -> np.ndarray:
        """Each of ``learners``' delay for one round (seconds, in their order), drawn from ``rng``.

        A ``fixed`` model with more stragglers than ``learners`` delays them all.
        """
        candidates = list(learners)
        delays = np.zeros(len(candidates))
        if self.model == "fixed":
            count = min(self.count, len(candidates))
            if count:
                delays[rng.choice(len(candidates), size=count, replace=False)] = self.delay_s
            return delays
        return np.where(rng.random(len(candidates)) < self.probability, self.delay_s, 0.0)

    def delays(self, active_learners: Sequence[int] | range) -> dict[int, float]:
        """``{learner: delay_s}`` for the next round, from the model's own stream.

        Only learners with work (``active_learners``) can straggle: an idle learner sends nothing to
        be late with.
        """
        active = [int(j) for j in active_learners]
        return dict(zip(active, self.draw(active, self._rng).tolist(), strict=True))


def first_decodable(
    finish_s: Mapping[int, float], can_decode: Callable[[list[int]], bool]
) -> tuple[list[int], float]:
    """Take answers in order of arrival until they decode: ``(learners used, in arrival order; the
    arrival time of the last one needed)``, or ``(every learner that answers, inf)``.

    Ties arrive in learner order; an answer at ``inf`` never arrives. ``can_decode`` gets the
    learners heard from so far, sorted.

    Examples:
        >>> first_decodable({0: 3.0, 1: 1.0, 2: 2.0}, lambda rows: len(rows) >= 2)
        ([1, 2], 2.0)
        >>> first_decodable({0: 0.1, 1: float("inf")}, lambda rows: rows == [0, 1])
        ([0], inf)
    """
    used: list[int] = []
    for learner in sorted(finish_s, key=lambda j: (finish_s[j], j)):
        if not np.isfinite(finish_s[learner]):
            break
        used.append(learner)
        if can_decode(sorted(used)):
            return used, float(finish_s[learner])
    return used, float("inf")


def learner_compute_s(assignment_matrix: np.ndarray, compute_s: float) -> np.ndarray:
    """Seconds each learner computes: ``compute_s`` per assigned agent; idle learners never answer."""
    agents = np.count_nonzero(assignment_matrix, axis=1)
    return np.where(agents > 0, agents * compute_s, np.inf)


def simulate_round_times(
    assignment_matrix: np.ndarray,
    model: StragglerModel,
    *,
    compute_s: float,
    can_decode: Callable[[list[int]], bool],
    rounds: int = 2000,
    seed: int = 0,
) -> np.ndarray:
    """Monte Carlo round times (seconds) of a code under a straggler model; seeded, so reproducible.

    Every learner may be drawn as a straggler, idle ones included (as in the paper's analysis).

    Args:
        assignment_matrix: the code's ``(N, M)`` matrix.
        model: draws the stragglers' delays each round (:meth:`StragglerModel.draw`).
        compute_s: compute seconds per assigned agent.
        can_decode: the decoder's test (``Decoder.can_decode``); answers are cached per subset.
        rounds: how many rounds to simulate.
        seed: seed of the straggler draws.

    Examples:
        >>> C = np.eye(3, 2)
        >>> from marlplug.coding.decoding import default_decoder
        >>> times = simulate_round_times(C, StragglerModel(count=1, delay_s=1.0), compute_s=0.1,
        ...                              can_decode=default_decoder(C).can_decode, rounds=300)
        >>> bool(0.5 < times.mean() < 0.9)   # delayed in the 2 of 3 rounds that hit a busy learner
        True
    """
    cache: dict[tuple[int, ...], bool] = {}

    def cached(rows: list[int]) -> bool:
        key = tuple(rows)
        if key not in cache:
            cache[key] = can_decode(rows)
        return cache[key]

    rng = np.random.default_rng(seed)
    compute = learner_compute_s(assignment_matrix, compute_s)
    learners = range(assignment_matrix.shape[0])
    times = []
    for _ in range(rounds):
        finish = compute + model.draw(learners, rng)
        times.append(first_decodable(dict(enumerate(finish.tolist())), cached)[1])
    return np.array(times)
