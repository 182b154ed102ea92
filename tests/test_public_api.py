"""The public API is ``marlplug.__all__``: a change to a name or to a signature is deliberate.

The snapshot (tests/public_api.txt) lists every public name and the signature of each one, and of
each public method and property its class defines (inherited torch and pydantic members left out).
When this test fails, the API changed: if that was meant, say so in CHANGELOG.md (Added, Changed,
Deprecated or Removed; a renamed keyword keeps working for one minor version, see its "Deprecation
policy") and write the new snapshot with

    python tests/test_public_api.py --update
"""

from __future__ import annotations

import difflib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

SNAPSHOT = Path(__file__).with_name("public_api.txt")
UPDATE = "python tests/test_public_api.py --update"


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):  # a builtin without a signature
        return "(...)"


def _own_members(cls: type) -> Iterator[tuple[str, Any]]:
    """Public members defined by ``cls`` or a marlplug base, in definition order."""
    seen: set[str] = set()
    for base in cls.__mro__:
        if not base.__module__.startswith("marlplug"):
            continue
        for name, member in vars(base).items():
            if name.startswith("_") or name in seen or name in {"Options", "model_config"}:
                continue
            seen.add(name)
            yield name, member


def _annotation(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None)
    return text if isinstance(text, str) and "[" not in repr(annotation) else repr(annotation)


def _describe_model(name: str, cls: type[BaseModel]) -> Iterator[str]:
    """A pydantic model by its fields (its generated signature carries pydantic's reprs of the
    bounds, which change with pydantic's version, not with marlplug's API)."""
    yield f"model {name}"
    for field, info in cls.model_fields.items():
        if info.default_factory is not None:
            default = f"{getattr(info.default_factory, '__name__', 'factory')}()"
        else:
            default = "required" if info.is_required() else repr(info.default)
        yield f"    {name}.{field}: {_annotation(info.annotation)} = {default}"


def _describe_class(name: str, cls: type) -> Iterator[str]:
    if issubclass(cls, BaseModel):
        yield from _describe_model(name, cls)
    else:
        kind = "exception" if issubclass(cls, BaseException) else "class"
        yield f"{kind} {name}{_signature(cls)}"
    for member_name, member in sorted(_own_members(cls)):
        qualified = f"    {name}.{member_name}"
        if isinstance(member, property):
            yield f"{qualified}: property"
        elif isinstance(member, (classmethod, staticmethod)):
            which = type(member).__name__
            yield f"{qualified}{_signature(getattr(cls, member_name))}  [{which}]"
        elif inspect.isfunction(member):
            yield f"{qualified}{_signature(member)}"


def public_api() -> list[str]:
    """The snapshot's lines: ``__all__``, then each name's signature and members."""
    import marlplug

    lines = [f"__all__ = {sorted(marlplug.__all__)}", f"__version__ = {marlplug.__version__!r}"]
    for name in sorted(marlplug.__all__):
        obj = getattr(marlplug, name)
        if inspect.isclass(obj):
            lines.extend(_describe_class(name, obj))
        elif inspect.isfunction(obj):
            lines.append(f"def {name}{_signature(obj)}")
        else:  # e.g. pluggy's markers: their signature is pluggy's
            package = type(obj).__module__.split(".")[0]
            lines.append(f"{name}: {package}.{type(obj).__qualname__}")
    return lines


def test_the_public_api_matches_its_snapshot() -> None:
    current = public_api()
    recorded = SNAPSHOT.read_text().splitlines() if SNAPSHOT.exists() else []
    if current != recorded:
        diff = "\n".join(
            difflib.unified_diff(recorded, current, "tests/public_api.txt", "marlplug", lineterm="")
        )
        raise AssertionError(
            f"the public API changed:\n{diff}\nIf that is meant, add it to CHANGELOG.md "
            f"(Unreleased: Added, Changed, Deprecated or Removed; renamed keywords keep working "
            f"for one minor version with a DeprecationWarning) and run: {UPDATE}"
        )


def test_the_snapshot_holds_no_addresses() -> None:
    """A default whose repr is an address would differ from one run to the next."""
    assert not [line for line in public_api() if " at 0x" in line]


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(f"usage: {UPDATE}")
    SNAPSHOT.write_text("\n".join(public_api()) + "\n")
    print(f"wrote {SNAPSHOT}")
