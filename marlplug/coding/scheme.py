"""The coding-scheme contract: a class built from its options that returns a validated N×M matrix.

Built-in and third-party codes subclass :class:`CodingScheme` and implement :meth:`build_matrix`;
the base class checks the sizes before and the matrix after, so every error names the scheme.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from marlplug.config import Options as ComponentOptions
from marlplug.config import validate_options
from marlplug.errors import UserError

if TYPE_CHECKING:
    from marlplug.coding.decoding import Decoder


class InvalidCodeError(UserError):
    """A coding scheme cannot give a valid assignment matrix for the requested sizes or options."""


def validate_assignment_matrix(
    matrix: Any,
    num_agents: int,
    num_learners: int,
    *,
    scheme: str = "assignment matrix",
    allow_idle_learners: bool = False,
) -> np.ndarray:
    """Check that ``matrix`` is a usable ``(N, M)`` float64 assignment matrix and return it.

    A usable matrix has shape ``(num_learners, num_agents)``, dtype float64, finite entries and
    rank ``num_agents``; an all-zero row (an idle learner) is allowed only with
    ``allow_idle_learners``.

    Args:
        matrix: what a scheme returned.
        num_agents: the number of agents M (columns).
        num_learners: the number of learners N (rows).
        scheme: how to name the scheme and its parameters in an error.
        allow_idle_learners: whether all-zero rows are allowed.

    Raises:
        InvalidCodeError: naming ``scheme``, the sizes and what is wrong.

    Examples:
        >>> validate_assignment_matrix(np.eye(3), 3, 3).shape
        (3, 3)
    """
    where = f"{scheme} with M={num_agents} agents, N={num_learners} learners"
    if not isinstance(matrix, np.ndarray):
        raise InvalidCodeError(f"{where}: expected a numpy.ndarray, got {type(matrix).__name__}")
    if matrix.shape != (num_learners, num_agents):
        raise InvalidCodeError(
            f"{where}: expected shape ({num_learners}, {num_agents}), got {matrix.shape}"
        )
    if matrix.dtype != np.float64:
        raise InvalidCodeError(f"{where}: expected dtype float64, got {matrix.dtype}")
    if not np.isfinite(matrix).all():
        raise InvalidCodeError(f"{where}: the matrix has non-finite entries")
    idle = np.flatnonzero(~matrix.any(axis=1))
    if idle.size and not allow_idle_learners:
        raise InvalidCodeError(
            f"{where}: learners {idle.tolist()} are assigned no agent (all-zero rows)"
        )
    rank = int(np.linalg.matrix_rank(matrix))
    if rank != num_agents:
        raise InvalidCodeError(f"{where}: rank {rank} < M={num_agents}; no decoder can recover θ")
    return matrix


class CodingScheme:
    """Base class of coding schemes: options in, validated ``(N, M)`` assignment matrices out.

    Subclasses set :attr:`name`, declare a nested ``Options`` model and implement
    :meth:`build_matrix`. The constructor takes exactly the ``Options`` fields as keyword arguments
    (``Scheme(**options.model_dump())``) and validates them. A scheme may override
    :meth:`make_decoder` to supply its own decoder.

    Examples:
        >>> import numpy as np
        >>> class Doubled(CodingScheme):
        ...     name = "doubled"
        ...     def build_matrix(self, num_agents, num_learners, seed):
        ...         return np.vstack([np.eye(num_agents)] * 2)[:num_learners]
        >>> Doubled().assignment_matrix(2, 4).tolist()
        [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
    """

    #: The registry name, used in error messages.
    name: ClassVar[str] = "code"
    #: Whether the scheme leaves learners idle (all-zero rows); only ``uncoded`` does.
    allows_idle_learners: ClassVar[bool] = False

    class Options(ComponentOptions):
        """No options."""

    def __init__(self, **options: Any) -> None:
        self.options = validate_options(self.Options, options, prefix=[self.name])

    def describe(self) -> str:
        """``name(option=value, ...)``, for messages and reports."""
        fields = ", ".join(f"{k}={v!r}" for k, v in self.options.model_dump().items())
        return f"{self.name}({fields})"

    def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
        """Return the raw ``(N, M)`` matrix; :meth:`assignment_matrix` validates it."""
        raise NotImplementedError(f"{type(self).__name__} must implement build_matrix()")

    def assignment_matrix(self, num_agents: int, num_learners: int, seed: int = 0) -> np.ndarray:
        """The validated ``(num_learners, num_agents)`` float64 assignment matrix for ``seed``.

        Raises:
            InvalidCodeError: the sizes are impossible or the scheme gave an invalid matrix.
        """
        where = f"{self.describe()} with M={num_agents} agents, N={num_learners} learners"
        if num_agents < 1:
            raise InvalidCodeError(f"{where}: needs at least one agent")
        if num_learners < num_agents:
            raise InvalidCodeError(f"{where}: needs N >= M (at least as many learners as agents)")
        matrix = self.build_matrix(num_agents, num_learners, seed)
        return validate_assignment_matrix(
            matrix,
            num_agents,
            num_learners,
            scheme=self.describe(),
            allow_idle_learners=self.allows_idle_learners,
        )

    def make_decoder(
        self, assignment_matrix: np.ndarray, *, max_condition: float | None = None
    ) -> Decoder:
        """A fresh decoder for ``assignment_matrix``; by default the one :func:`make_decoder` picks."""
        from marlplug.coding.decoding import default_decoder

        return default_decoder(assignment_matrix, max_condition=max_condition)
