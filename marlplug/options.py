"""The base class of every component's options, and the bounds they share.

Every configurable component (env, algorithm, loss, coding scheme) declares its settings as a
nested ``Options`` model derived from :class:`Options`; this module imports nothing of marlplug,
so any layer may use it. :mod:`marlplug.config` re-exports both names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

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

    #: Defaults of a run's config (``marlplug train``, :func:`marlplug.config.load_config`) where
    #: they differ from the fields' own, which stay what the component builds when called from
    #: Python: a scenario's observations come in the reference env's (mpe2's) entity order from
    #: ``make_env``, nearest first in a run. The config fills them in for every field it leaves out.
    run_defaults: ClassVar[Mapping[str, Any]] = {}

    # Attribute docstrings become field descriptions, shown in the configuration reference.
    # Floats must be finite everywhere: an infinite learning rate or timeout is never meant.
    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
        use_attribute_docstrings=True,
        allow_inf_nan=False,
    )
