"""Whether a coded run can work at all, before it starts: ``marlplug codes analyze``'s verdict for the
run's own assignment matrix and straggler count.

A code whose answers do not decode even when every learner answers (rank below M, or a condition
number above the decoder's limit) makes every round wait for its timeout and then re-dispatch:
``codes analyze`` shows it as "never" (no expected round time, recovery 0.00 at k=0). Such a run is
refused with one line instead of starting.
"""

from __future__ import annotations

import numpy as np

from marlplug.coding.decoding import make_decoder
from marlplug.errors import ConfigError


def check_code_decodes(
    name: str,
    scheme: object,
    assignment_matrix: np.ndarray,
    *,
    stragglers: int = 0,
    max_condition: float | None = None,
) -> None:
    """Raise a one-line :class:`ConfigError` unless ``assignment_matrix`` decodes from all its
    learners and ``stragglers`` fit among the learners that have work.

    Args:
        name: the scheme's config name (for the message).
        scheme: the scheme (its own decoder is used, as ``codes analyze`` does).
        assignment_matrix: the run's ``(N, M)`` matrix.
        stragglers: the configured straggler count per round (the fixed model's ``count``).
        max_condition: the decoder's condition-number limit (default: the decoder's).

    Examples:
        >>> from marlplug.coding.codes import MDSCode, VandermondeCode
        >>> check_code_decodes("mds", MDSCode(), MDSCode().assignment_matrix(7, 8, 0), stragglers=1)
        >>> check_code_decodes("vandermonde", VandermondeCode(), VandermondeCode().assignment_matrix(7, 8, 0))
        Traceback (most recent call last):
        ...
        marlplug.errors.ConfigError: coding.scheme: 'vandermonde' cannot decode M=7 agents even when all N=8 learners answer (condition number 1.7e+06 > limit 1e+06): every round would time out; `marlplug codes analyze -M 7 -N 8` compares the codes (e.g. mds)
    """
    matrix = np.asarray(assignment_matrix, dtype=np.float64)
    num_learners, num_agents = matrix.shape
    active = [j for j in range(num_learners) if matrix[j].any()]
    decoder = make_decoder(matrix, scheme=scheme, max_condition=max_condition)
    if not decoder.can_decode(active):
        raise ConfigError(
            f"coding.scheme: '{name}' cannot decode M={num_agents} agents even when all "
            f"N={num_learners} learners answer ({decoder.why_not(active)}): every round would time "
            f"out; `marlplug codes analyze -M {num_agents} -N {num_learners}` compares the codes "
            "(e.g. mds)"
        )
    if stragglers > len(active):
        raise ConfigError(
            f"coding.stragglers.count: {stragglers} stragglers per round, but only {len(active)} "
            f"of the N={num_learners} learners have work under '{name}'; use at most {len(active)}"
        )
