"""One-line messages for config errors: the field's full path, what was expected and what was given.

Example:
    >>> format_loc(("losses", 1, "coef"))
    'losses[1].coef'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from marlplug.registry import unknown_name_message


def format_loc(loc: Sequence[str | int]) -> str:
    """``("losses", 1, "coef")`` -> ``"losses[1].coef"``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_EXPECTED = {
    "float_parsing": "expected a number",
    "float_type": "expected a number",
    "int_parsing": "expected an integer",
    "int_type": "expected an integer",
    "int_from_float": "expected an integer",
    "bool_parsing": "expected true or false",
    "bool_type": "expected true or false",
    "string_type": "expected a string",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "list_type": "expected a list",
}


def _fields_at(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The field names of the (nested) model that ``loc`` points into."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not (
            isinstance(current, type) and issubclass(current, BaseModel)
        ):
            continue
        info = current.model_fields.get(part)
        if info is None:
            return []
        annotation = info.annotation
        args = [a for a in getattr(annotation, "__args__", ()) if isinstance(a, type)]
        current = (
            annotation
            if isinstance(annotation, type)
            else next((a for a in args if issubclass(a, BaseModel)), None)
        )
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _describe(
    error: Mapping[str, Any], model: type[BaseModel], prefix: Sequence[str | int], owner: str
) -> str:
    loc = [*prefix, *error["loc"]]
    path = clip(format_loc(loc) or "config")
    kind = error["type"]
    if kind == "extra_forbidden":
        field = clip(str(loc[-1]))
        inside = list(error["loc"])[:-1]
        # A component's own fields are named by the component ("env 'keep_away'"): which fields
        # exist depends on it, not on the section.
        where = owner if owner and not inside else format_loc(loc[:-1])
        return f"{path}: " + unknown_name_message(
            "field", field, _fields_at(model, inside), where=where
        )
    if kind == "missing":
        return f"{path}: required field is missing"
    if kind == "bool_not_number":  # the message says what was given, as the file spells it
        return f"{path}: {error['msg']}"
    got = error.get("input")
    expected = _EXPECTED.get(kind)
    if expected is None:
        expected = str(error["msg"])
        expected = expected[0].lower() + expected[1:]
    if isinstance(got, Mapping):  # a check of the whole section: its dump would say nothing
        return f"{path}: {expected}"
    return f"{path}: {expected}, got {clip(repr(got))}"


def clip(text: str, limit: int = 80) -> str:
    """``text`` made printable and cut to ``limit`` characters, so that an error about a huge or
    binary value stays one short line.

    >>> clip("x" * 100, 10)
    'xxxxxxx...'
    """
    text = printable(text, keep_newlines=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every non-printable character escaped as Python writes it, newlines kept if asked.

    Messages quote names and values from config files; escaping keeps a file's control characters
    (terminal escape sequences, line separators) off the terminal.

    >>> print(printable(chr(27) + "[2J" + chr(10) + "ok"))
    \\x1b[2J
    ok
    """
    return "".join(
        char if char.isprintable() or (keep_newlines and char == "\n") else repr(char)[1:-1]
        for char in text
    )


def validation_message(
    exc: ValidationError,
    model: type[BaseModel],
    prefix: Sequence[str | int] = (),
    *,
    owner: str = "",
) -> str:
    """Turn a pydantic error into one line per problem (the first, plus a count of the rest).

    ``owner`` names the component whose options ``model`` holds (``"env 'keep_away'"``); an
    unknown field is then reported as unknown to it.

    Example:
        >>> from marlplug.envs.options import ScenarioOptions
        >>> try:
        ...     ScenarioOptions.model_validate({"agentz": 3})
        ... except ValidationError as exc:
        ...     print(validation_message(exc, ScenarioOptions, ["env"], owner="env 'spread'"))
        env.agentz: unknown field 'agentz' in env 'spread' (did you mean 'agents'?); available: agents, continuous_actions, max_steps
    """
    errors = exc.errors()
    first = _describe(errors[0], model, prefix, owner)
    if len(errors) > 1:
        first += f"\n(and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return first
