"""The base class of every component's options, and the bounds they share.

Every configurable component (env, algorithm, loss, coding scheme) declares its settings as a
nested ``Options`` model derived from :class:`Options`; this module imports nothing of marlplug,
so any layer may use it. :mod:`marlplug.config` re-exports both names.
"""

from __future__ import annotations

import collections.abc
import types
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

#: Upper bound of every network width (hidden layers, features): 16384 units.
MAX_WIDTH = 16384


class Options(BaseModel):
    """Base class for a component's options: unknown fields are errors, values are validated.

    A boolean is not a number: every numeric field of every subclass refuses ``true`` and
    ``false`` (pydantic's lax mode would read ``max_minutes: true`` as 1.0); a field that takes
    ``bool``, alone or in a union, still takes them.

    Example:
        >>> class RedundancyOptions(Options):
        ...     coef: float = 0.01
        >>> RedundancyOptions(coef=0.1).coef
        0.1
        >>> RedundancyOptions(coef=True)
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for RedundancyOptions
        coef
          expected a number, got a boolean (true) [type=bool_not_number, input_value=True, input_type=bool]
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

    # Here, once, for every field of every config section and plugin. pydantic has no switch for
    # this one conversion: strict mode would also refuse `lr: 1e-3`, which YAML reads as a string.
    @field_validator("*", mode="before")
    @classmethod
    def _boolean_is_not_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, (bool, list, tuple, dict)) or info.field_name is None:
            return value  # the common case, without looking at the field's type
        field = cls.model_fields.get(info.field_name)
        found = None if field is None else boolean_read_as_number(field.annotation, value)
        if found is not None:
            expected, where, boolean = found
            raise PydanticCustomError(
                "bool_not_number",
                "expected {expected}{where}, got a boolean ({boolean})",
                {
                    "expected": expected,
                    "where": f" at {where}" if where else "",
                    "boolean": "true" if boolean else "false",
                },
            )
        return value


def boolean_read_as_number(
    annotation: Any, value: Any, where: str = ""
) -> tuple[str, str, bool] | None:
    """Where ``value`` holds a boolean that a field typed ``annotation`` would read as a number:
    ``(what the field expects there, the position inside value, the boolean)``, else ``None``.

    Examples:
        >>> boolean_read_as_number(float | None, True)
        ('a number', '', True)
        >>> boolean_read_as_number(list[int], [64, False])
        ('an integer', '[1]', False)
        >>> boolean_read_as_number(Literal["auto"] | int | bool, True) is None
        True
    """
    members = _union_members(annotation)
    if isinstance(value, bool):
        if any(_takes_boolean(member) for member in members):
            return None
        numbers = [number for member in members for number in _number_types(member)]
        if not numbers:
            return None  # not a numeric field: pydantic's own error says what it wants
        expected = "an integer" if all(issubclass(n, int) for n in numbers) else "a number"
        return expected, where, value
    # A container is wrong only if every way the field could read it reads a boolean as a number.
    first: tuple[str, str, bool] | None = None
    for items in _item_types(members, value):
        found = next(
            (
                problem
                for (position, item), item_type in items
                if (problem := boolean_read_as_number(item_type, item, f"{where}[{position!r}]"))
            ),
            None,
        )
        if found is None:
            return None
        first = first or found
    return first


_UNIONS = (Union, types.UnionType)
_SEQUENCES = (
    list,
    tuple,
    set,
    frozenset,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Set,
)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _unwrap(annotation: Any) -> Any:
    """``Annotated[int, Field(ge=1)]`` -> ``int``."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _union_members(annotation: Any) -> list[Any]:
    annotation = _unwrap(annotation)
    if get_origin(annotation) in _UNIONS:
        return [_unwrap(member) for member in get_args(annotation)]
    return [annotation]


def _takes_boolean(member: Any) -> bool:
    if member is Any or member is object:
        return True
    if get_origin(member) is Literal:
        return any(isinstance(choice, bool) for choice in get_args(member))
    return isinstance(member, type) and issubclass(member, bool)


def _number_types(member: Any) -> list[type]:
    """The numeric types ``member`` reads a boolean as: ``int`` and ``float`` (and subclasses),
    and the numbers of a ``Literal`` (``Literal[1, 2]`` takes ``true`` as 1)."""
    if get_origin(member) is Literal:
        return [type(choice) for choice in get_args(member) if isinstance(choice, (int, float))]
    if isinstance(member, type) and issubclass(member, (int, float)):
        return [member]
    return []


def _item_types(members: list[Any], value: Any) -> list[list[tuple[tuple[Any, Any], Any]]]:
    """For each container type among ``members`` that can hold ``value``: its items, each paired
    with ``(position, item)`` and the type it is read as."""
    readings = []
    for member in members:
        origin, args = get_origin(member) or member, get_args(member)
        if isinstance(value, dict) and origin in _MAPPINGS:
            item_type = args[1] if len(args) == 2 else Any
            readings.append([(entry, item_type) for entry in value.items()])
        elif isinstance(value, (list, tuple)) and origin in _SEQUENCES:
            if origin is tuple and args and args[-1] is not Ellipsis:
                types_by_position = [*args, *[Any] * len(value)][: len(value)]
            else:
                types_by_position = [args[0] if args else Any] * len(value)
            readings.append(list(zip(enumerate(value), types_by_position, strict=True)))
    return readings
