"""What a code costs and what it buys: density, straggler tolerance, recovery, conditioning, round time.

:func:`analyze_code` reports one scheme at given sizes; :func:`recommend` picks the fastest under
the straggler model. ``marlplug codes analyze`` prints these reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marlplug.coding.conditioning import DEFAULT_MAX_SUBSETS, row_subsets, worst_condition
from marlplug.coding.decoding import DEFAULT_MAX_CONDITION, make_decoder
from marlplug.coding.scheme import CodingScheme
from marlplug.coding.stragglers import StragglerModel, simulate_round_times
from marlplug.errors import UserError


@dataclass(frozen=True)
class AnalysisSettings:
    """Sizes, timing model and sampling budget of an analysis.

    Attributes:
        num_agents: M.
        num_learners: N.
        compute_s: seconds a learner computes per assigned agent.
        stragglers: the straggler model for ``expected_round_s``.
        max_condition: decodable subsets have at most this condition number.
        rounds: Monte Carlo rounds for round times.
        max_subsets: enumerate straggler sets exactly while C(N, k) is at most this.
        samples: Monte Carlo straggler sets per k beyond that.
        seed: seed of the assignment matrices and every random draw.

    Examples:
        >>> AnalysisSettings(num_agents=8, num_learners=15).straggler_delay_s
        1.0
    """

    num_agents: int
    num_learners: int
    compute_s: float = 0.1
    stragglers: StragglerModel = field(default_factory=lambda: StragglerModel(count=1, delay_s=1.0))
    max_condition: float = DEFAULT_MAX_CONDITION
    rounds: int = 2000
    max_subsets: int = DEFAULT_MAX_SUBSETS
    samples: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.num_agents < 1:
            raise UserError(f"agents: must be at least 1, got {self.num_agents}")
        if self.num_learners < self.num_agents:
            raise UserError(
                f"learners: must be at least the number of agents ({self.num_agents}), got {self.num_learners}"
            )
        if self.compute_s < 0:
            raise UserError(f"compute-s: must be >= 0, got {self.compute_s}")
        if self.straggler_delay_s < 0:
            raise UserError(f"delay-s: must be >= 0, got {self.straggler_delay_s}")
        count = self.stragglers.count if self.stragglers.model == "fixed" else 0
        if not 0 <= count <= self.num_learners:
            raise UserError(f"stragglers: must be between 0 and N={self.num_learners}, got {count}")
        if self.rounds < 1 or self.samples < 1:
            raise UserError(
                f"rounds and samples must be positive, got {self.rounds} and {self.samples}"
            )

    @property
    def straggler_delay_s(self) -> float:
        return float(self.stragglers.delay_s)


@dataclass
class CodeReport:
    """One code's analysis (see :func:`analyze_code`); ``as_json`` gives the CLI's JSON entry."""

    name: str
    description: str
    density: float
    tolerance: int | None
    recovery: dict[int, float]
    recovery_exact: bool
    worst_condition: float
    condition_exact: bool
    expected_round_s: float
    round_s_by_stragglers: dict[int, float]

    def as_json(self) -> dict[str, Any]:
        def number(value: float) -> float | None:
            return value if math.isfinite(value) else None

        return {
            "name": self.name,
            "description": self.description,
            "density": self.density,
            "tolerance": self.tolerance,
            "recovery": {str(k): p for k, p in self.recovery.items()},
            "recovery_exact": self.recovery_exact,
            "worst_condition": number(self.worst_condition),
            "condition_exact": self.condition_exact,
            "expected_round_s": number(self.expected_round_s),
            "round_s_by_stragglers": {
                str(k): number(t) for k, t in self.round_s_by_stragglers.items()
            },
        }


def density(assignment_matrix: np.ndarray) -> float:
    """Average number of agents per learner (idle learners count as 0): the compute cost.

    Examples:
        >>> density(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        1.3333333333333333
    """
    return float(np.count_nonzero(assignment_matrix) / assignment_matrix.shape[0])


def recovery_probabilities(
    num_learners: int,
    can_decode: Callable[[list[int]], bool],
    stragglers: Iterable[int],
    *,
    max_subsets: int = DEFAULT_MAX_SUBSETS,
    samples: int = 2000,
    seed: int = 0,
) -> tuple[dict[int, float], bool]:
    """P(decodable) when k uniformly random learners never answer, for each k in ``stragglers``.

    Exact (every straggler set) while C(N, k) <= ``max_subsets``, else ``samples`` seeded random sets.

    Returns:
        ``({k: probability}, exact)`` where ``exact`` says whether every k was enumerated.

    Examples:
        >>> probabilities, exact = recovery_probabilities(3, lambda rows: len(rows) >= 2, [0, 1, 2])
        >>> probabilities, exact
        ({0: 1.0, 1: 1.0, 2: 0.0}, True)
    """
    everyone = np.arange(num_learners)
    probabilities: dict[int, float] = {}
    all_exact = True
    for k in stragglers:
        removed, exact = row_subsets(num_learners, k, max_subsets=max_subsets, seed=seed + k)
        if not exact:
            removed = removed[:samples]
        all_exact &= exact
        decoded = [can_decode(np.setdiff1d(everyone, gone).tolist()) for gone in removed]
        probabilities[k] = float(np.mean(decoded))
    return probabilities, all_exact


def tolerance_from_recovery(recovery: dict[int, float]) -> int | None:
    """The largest k such that every k' <= k decodes with probability 1 (None if k=0 fails).

    Examples:
        >>> tolerance_from_recovery({0: 1.0, 1: 1.0, 2: 0.4})
        1
    """
    tolerance = None
    for k in sorted(recovery):
        if recovery[k] < 1.0:
            break
        tolerance = k
    return tolerance


def analyze_code(name: str, scheme: CodingScheme, settings: AnalysisSettings) -> CodeReport:
    """Analyze ``scheme`` at the settings' sizes.

    Examples:
        >>> from marlplug.coding.codes import ReplicationCode
        >>> report = analyze_code("replication", ReplicationCode(), AnalysisSettings(2, 4, rounds=50))
        >>> report.density, report.tolerance, report.recovery[1]
        (1.0, 1, 1.0)
    """
    matrix = scheme.assignment_matrix(
        settings.num_agents, settings.num_learners, seed=settings.seed
    )
    decoder = make_decoder(matrix, scheme=scheme, max_condition=settings.max_condition)
    cache: dict[tuple[int, ...], bool] = {}

    def can_decode(rows: list[int]) -> bool:
        key = tuple(rows)
        if key not in cache:
            cache[key] = decoder.can_decode(rows)
        return cache[key]

    num_learners, num_agents = matrix.shape
    ks = range(min(num_learners, num_learners - num_agents + 1) + 1)
    recovery, recovery_exact = recovery_probabilities(
        num_learners,
        can_decode,
        ks,
        max_subsets=settings.max_subsets,
        samples=settings.samples,
        seed=settings.seed,
    )
    conditions = worst_condition(matrix, max_subsets=settings.max_subsets, seed=settings.seed)

    def mean_round_s(model: StragglerModel, rounds: int) -> float:
        times = simulate_round_times(
            matrix,
            model,
            compute_s=settings.compute_s,
            can_decode=can_decode,
            rounds=rounds,
            seed=settings.seed,
        )
        return float(times.mean())

    # The per-k curve is for plots and tables: a quarter of the rounds is plenty.
    curve_rounds = max(100, settings.rounds // 4)
    by_stragglers = {
        k: mean_round_s(StragglerModel(count=k, delay_s=settings.straggler_delay_s), curve_rounds)
        for k in ks
    }
    return CodeReport(
        name=name,
        description=scheme.describe(),
        density=density(matrix),
        tolerance=tolerance_from_recovery(recovery),
        recovery=recovery,
        recovery_exact=recovery_exact,
        worst_condition=conditions.worst,
        condition_exact=conditions.exact,
        expected_round_s=mean_round_s(settings.stragglers, settings.rounds),
        round_s_by_stragglers=by_stragglers,
    )


def recommend(reports: Iterable[CodeReport]) -> tuple[str, str] | None:
    """The code with the lowest expected round time (ties within 1%: the lower density), and why.

    Returns None when no code decodes under the settings.
    """
    usable = [report for report in reports if math.isfinite(report.expected_round_s)]
    if not usable:
        return None
    fastest = min(report.expected_round_s for report in usable)
    near = [report for report in usable if report.expected_round_s <= fastest * 1.01]
    best = min(near, key=lambda report: (report.density, report.worst_condition))
    reason = (
        f"lowest expected round time ({best.expected_round_s:.3g} s) with density "
        f"{best.density:.3g} agents per learner and tolerance {best.tolerance}"
    )
    return best.name, reason
