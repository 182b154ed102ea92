"""The base class of every component's options, and the bounds they share.

Every configurable component (env, algorithm, loss, coding scheme) declares its settings as a
nested ``Options`` model derived from :class:`Options`; this module imports nothing of marlplug,
so any layer may use it. :mod:`marlplug.config` re-exports both names.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

#: Upper bound of every network width (hidden layers, features): 16384 units.
MAX_WIDTH = 16384


class Options(BaseModel):
    """Base class for a component's options: unknown fields are errors, values are validated.

    Example:
        >>> class RedundancyOptions(Options):
        ...     coef: float = 0.01
        >>> RedundancyOptions(coef=0.1).coef
        0.1
    """

    # Attribute docstrings become field descriptions, shown in the configuration reference.
    # Floats must be finite everywhere: an infinite learning rate or timeout is never meant.
    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
        use_attribute_docstrings=True,
        allow_inf_nan=False,
    )
