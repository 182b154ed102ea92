"""Straggler models and the round time they cause: when does the controller first hold a decodable set?

A round: learner j computes for ``compute_s`` seconds per assigned agent, a straggler adds its delay,
and the controller decodes as soon as the results received so far are decodable. Used by
``marlplug codes analyze`` and by the distributed runtime's benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from marlplug.errors import UserError


class StragglerModel(Protocol):
    """Draws each learner's extra delay for one round."""

    def sample_delays(self, num_learners: int, rng: np.random.Generator) -> np.ndarray:
        """Extra seconds per learner, shape ``[num_learners]``."""
        ...


@dataclass(frozen=True)
class FixedCountStragglers:
    """The paper's model: each round ``count`` learners, chosen uniformly, answer ``delay_s`` late.

    Examples:
        >>> FixedCountStragglers(count=2, delay_s=1.0).sample_delays(4, np.random.default_rng(0)).sum()
        np.float64(2.0)
    """

    count: int
    delay_s: float

    def sample_delays(self, num_learners: int, rng: np.random.Generator) -> np.ndarray:
        if not 0 <= self.count <= num_learners:
            raise UserError(
                f"stragglers: count {self.count} must be between 0 and N={num_learners}"
            )
        delays = np.zeros(num_learners)
        delays[rng.choice(num_learners, size=self.count, replace=False)] = self.delay_s
        return delays


@dataclass(frozen=True)
class RandomStragglers:
    """Each learner independently straggles with ``probability`` and then answers ``delay_s`` late.

    Examples:
        >>> RandomStragglers(probability=1.0, delay_s=0.5).sample_delays(3, np.random.default_rng(0))
        array([0.5, 0.5, 0.5])
    """

    probability: float
    delay_s: float

    def sample_delays(self, num_learners: int, rng: np.random.Generator) -> np.ndarray:
        return np.where(rng.random(num_learners) < self.probability, self.delay_s, 0.0)


def straggler_model(
    model: str = "fixed", *, count: int = 0, probability: float = 0.0, delay_s: float = 0.0
) -> StragglerModel:
    """Build a model from the fields of the config's ``coding.stragglers`` section.

    Args:
        model: ``"fixed"`` (``count`` stragglers per round) or ``"random"`` (each with ``probability``).
        count: stragglers per round (``"fixed"``).
        probability: per-learner straggle probability (``"random"``).
        delay_s: how late a straggler answers.

    Examples:
        >>> straggler_model("random", probability=0.1, delay_s=1.0)
        RandomStragglers(probability=0.1, delay_s=1.0)
    """
    if model == "fixed":
        return FixedCountStragglers(count=count, delay_s=delay_s)
    if model == "random":
        return RandomStragglers(probability=probability, delay_s=delay_s)
    raise UserError(f"stragglers.model: unknown model '{model}'; available: fixed, random")


def learner_compute_s(assignment_matrix: np.ndarray, compute_s: float) -> np.ndarray:
    """Seconds each learner computes: ``compute_s`` per assigned agent; idle learners never answer."""
    agents = np.count_nonzero(assignment_matrix, axis=1)
    return np.where(agents > 0, agents * compute_s, np.inf)


def decode_time(finish_s: np.ndarray, can_decode: Callable[[list[int]], bool]) -> float:
    """When the results received so far first become decodable (inf if they never do).

    Args:
        finish_s: when each learner's result arrives.
        can_decode: whether results from a list of learners are decodable.

    Examples:
        >>> decode_time(np.array([3.0, 1.0, 2.0]), lambda rows: len(rows) >= 2)
        2.0
    """
    order = np.argsort(finish_s, kind="stable")
    for count in range(1, len(order) + 1):
        if not np.isfinite(finish_s[order[count - 1]]):
            break
        if can_decode(sorted(order[:count].tolist())):
            return float(finish_s[order[count - 1]])
    return float("inf")


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

    Args:
        assignment_matrix: the code's ``(N, M)`` matrix.
        model: draws the stragglers' delays each round.
        compute_s: compute seconds per assigned agent.
        can_decode: the decoder's test (``Decoder.can_decode``); answers are cached per subset.
        rounds: how many rounds to simulate.
        seed: seed of the straggler draws.

    Examples:
        >>> C = np.eye(3, 2)
        >>> from marlplug.coding.decoding import default_decoder
        >>> times = simulate_round_times(C, FixedCountStragglers(1, 1.0), compute_s=0.1,
        ...                              can_decode=default_decoder(C).can_decode, rounds=300)
        >>> bool(0.5 < times.mean() < 0.9)   # delayed in the 2 of 3 rounds that hit a busy learner
        True
    """
    cache: dict[tuple[int, ...], bool] = {}

    def cached(rows: Sequence[int]) -> bool:
        key = tuple(rows)
        if key not in cache:
            cache[key] = can_decode(list(rows))
        return cache[key]

    rng = np.random.default_rng(seed)
    compute = learner_compute_s(assignment_matrix, compute_s)
    num_learners = assignment_matrix.shape[0]
    return np.array(
        [
            decode_time(compute + model.sample_delays(num_learners, rng), cached)
            for _ in range(rounds)
        ]
    )
