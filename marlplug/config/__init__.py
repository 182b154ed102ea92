"""The config file: schema, YAML/TOML loading, ``--set`` overrides and path-aware errors.

A config composes named components (env, algorithm, losses, coding scheme); each component validates
its own options against the ``Options`` pydantic model its plugin declares, so an error names the full
path (``losses[1].coef: expected a number, got 'high'``).

The package holds, bottom up: :mod:`~marlplug.config.loading` (reading files),
:mod:`~marlplug.config.messages` (one-line errors), :mod:`~marlplug.config.train` (the ``train:``
section), :mod:`~marlplug.config.schema` (every section, :class:`MarlplugConfig`),
:mod:`~marlplug.config.overrides` (``--set``), :mod:`~marlplug.config.checks` (checks across
sections), :mod:`~marlplug.config.resolve` (:func:`load_config`) and
:mod:`~marlplug.config.reference` (the Markdown reference). This module only re-exports.

Example:
    >>> from marlplug.config import load_config
    >>> load_config(overrides=["train.updates=2"]).train.updates
    2
"""

from marlplug.config.loading import read_config_file
from marlplug.config.messages import format_loc
from marlplug.config.overrides import apply_override
from marlplug.config.resolve import (
    load_config,
    resolved_dict,
    validate_components,
    validate_options,
    with_run_defaults,
)
from marlplug.config.schema import (
    MAX_LEARNERS,
    MAX_WAIT_S,
    AlgorithmSpec,
    CodingSection,
    ComponentSpec,
    EnvSpec,
    LoggingBackend,
    LoggingSection,
    MarlplugConfig,
    MLflowSection,
    StragglerSection,
    WandbSection,
    one_word_name,
)
from marlplug.config.train import TrainSection
from marlplug.options import MAX_WIDTH, Options

__all__ = [
    "MAX_LEARNERS",
    "MAX_WAIT_S",
    "MAX_WIDTH",
    "AlgorithmSpec",
    "CodingSection",
    "ComponentSpec",
    "EnvSpec",
    "LoggingBackend",
    "LoggingSection",
    "MLflowSection",
    "MarlplugConfig",
    "Options",
    "StragglerSection",
    "TrainSection",
    "WandbSection",
    "apply_override",
    "format_loc",
    "load_config",
    "one_word_name",
    "read_config_file",
    "resolved_dict",
    "validate_components",
    "validate_options",
    "with_run_defaults",
]
