"""A coded run's scheme and assignment matrix from its ``coding:`` section, checked before any work:
N >= M, a code that decodes when every learner answers (``codes analyze``'s verdict), and a finite
round timeout."""

from __future__ import annotations

from typing import Any

import numpy as np

from marlplug.coding.verdict import check_code_decodes
from marlplug.config import CodingSection
from marlplug.distributed.wall_round import check_round_timeout
from marlplug.errors import ConfigError
from marlplug.plugins import get_plugin_manager


def coded_assignment(coding: CodingSection, num_agents: int, seed: int) -> tuple[Any, np.ndarray]:
    """``(scheme, C)`` for ``coding`` and ``num_agents`` agents, or a one-line :class:`ConfigError`.

    Examples:
        >>> from marlplug import load_config
        >>> coding = load_config(data={"coding": {"scheme": "mds", "learners": 5}}).coding
        >>> scheme, matrix = coded_assignment(coding, 3, seed=0)
        >>> matrix.shape
        (5, 3)
        >>> coded_assignment(coding, 6, seed=0)
        Traceback (most recent call last):
        ...
        marlplug.errors.ConfigError: coding.learners: 5 learners cannot hold 6 agents (need N >= M)
    """
    check_round_timeout(coding.round_timeout_s)
    registries = get_plugin_manager().registries
    scheme_class = registries["code"].get_component(coding.scheme.name, field="coding.scheme.name")
    scheme = scheme_class(**coding.scheme.options.model_dump())
    if coding.learners < num_agents:
        raise ConfigError(
            f"coding.learners: {coding.learners} learners cannot hold {num_agents} agents "
            f"(need N >= M)"
        )
    matrix = scheme.assignment_matrix(num_agents, coding.learners, seed)
    stragglers = coding.stragglers.count if coding.stragglers.model == "fixed" else 0
    check_code_decodes(coding.scheme.name, scheme, matrix, stragglers=stragglers)
    return scheme, matrix
