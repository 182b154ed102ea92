"""What a plugin's component must look like before it is registered, checked once at load time.

The plugin manager runs :func:`component_problem` on every name -> component pair a hook returns, so
a component that would fail later (at ``train``, deep in a model) is reported by ``marlplug plugins``
instead, with the fix. The checks read the hookspec contract: a class, built as
``cls(**Options(...).model_dump())``; an env is an ``EnvScenario`` keyed ``"<backend>/<scenario>"``.
"""

from __future__ import annotations

import importlib
import inspect
import re

from pydantic import BaseModel

#: Env keys are ``"<backend>/<scenario>"``: ``env: {name: <scenario>, backend: <backend>}`` finds them.
ENV_KEY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")

#: Kind -> (module, class) a component of that kind must subclass, and the one its ``Options`` must.
#: Imported by name when a component of that kind is checked, so this core module does not import
#: the (torch-heavy) packages that define them; the hook that returned the component already did.
_REQUIRED_BASES: dict[str, tuple[tuple[str, str] | None, tuple[str, str] | None]] = {
    "env": (
        ("marlplug.envs.scenario", "EnvScenario"),
        ("marlplug.envs.options", "ScenarioOptions"),
    ),
}


def _load(path: tuple[str, str]) -> type:
    cls = getattr(importlib.import_module(path[0]), path[1])
    assert isinstance(cls, type)
    return cls


def _public_name(cls: type) -> str:
    """``marlplug.envs.EnvScenario`` rather than the defining submodule, where the package exports it."""
    package = cls.__module__.rsplit(".", 1)[0]
    exported = getattr(importlib.import_module(package), cls.__name__, None)
    return f"{package if exported is cls else cls.__module__}.{cls.__name__}"


def _describe(obj: object) -> str:
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return f"the function {obj.__qualname__}()"
    return f"a {type(obj).__name__} instance"


def _constructor_problem(kind: str, name: str, cls: type, options: type[BaseModel]) -> str | None:
    """The constructor must accept every ``Options`` field and need nothing else."""
    try:
        parameters = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):  # a C-level constructor without a signature: nothing to check
        return None
    by_name = {
        p.name: p
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
    fields = list(options.model_fields)
    missing = [field for field in fields if field not in by_name and not takes_any]
    if missing:
        listed = ", ".join(f"'{field}'" for field in missing)
        return (
            f"{kind} '{name}': its Options field(s) {listed} are not parameters of "
            f"{cls.__name__}.__init__, which is called as {cls.__name__}(**options); add them to "
            f"__init__ or remove them from {options.__name__}"
        )
    required = [
        p.name
        for p in by_name.values()
        if p.default is inspect.Parameter.empty and p.name not in fields
    ]
    if required:
        listed = ", ".join(f"'{parameter}'" for parameter in required)
        return (
            f"{kind} '{name}': {cls.__name__}.__init__ requires {listed}, which its Options "
            f"({options.__name__}) does not have; give them defaults or add them to the Options"
        )
    return None


def reference_problem(kind: str, name: object, reference: str) -> str | None:
    """Why the string ``reference`` is not a lazy ``"module:attribute"`` component; ``None`` if it is.

    Examples:
        >>> print(reference_problem("code", "mds", "marlplug.coding.codes:MDSCode"))
        None
        >>> reference_problem("code", "mds", "MDSCode")
        "code 'mds': 'MDSCode' is not a 'module:attribute' reference"
    """
    if not isinstance(name, str) or not name:
        return f"{kind} name {name!r} is not a non-empty string"
    if kind == "env" and not ENV_KEY.fullmatch(name):
        return f"env key '{name}' must be '<backend>/<scenario>', e.g. 'mpe/cooperative_navigation'"
    module_name, colon, attribute = reference.partition(":")
    if not (module_name and colon and attribute):
        return f"{kind} '{name}': '{reference}' is not a 'module:attribute' reference"
    return None


def component_problem(kind: str, name: object, component: object) -> str | None:
    """Why ``component`` cannot be registered as the ``kind`` called ``name``; ``None`` if it can.

    Examples:
        >>> component_problem("env", "cooperative_navigation", object)
        "env key 'cooperative_navigation' must be '<backend>/<scenario>', e.g. 'mpe/cooperative_navigation'"
        >>> def mds(): ...
        >>> component_problem("code", "mds", mds)
        "code 'mds' is the function mds(), not a class; return the class itself, e.g. {'mds': MyCode}"
        >>> from marlplug.config import Options
        >>> class Coefficient(Options):
        ...     coef: float = 1.0
        >>> class Penalty:
        ...     Options = Coefficient
        ...     def __init__(self, *, weight: float = 1.0) -> None: ...
        >>> print(component_problem("loss", "penalty", Penalty))
        loss 'penalty': its Options field(s) 'coef' are not parameters of Penalty.__init__, which is called as Penalty(**options); add them to __init__ or remove them from Coefficient
    """
    if not isinstance(name, str) or not name:
        return f"{kind} name {name!r} is not a non-empty string"
    if kind == "env" and not ENV_KEY.fullmatch(name):
        return f"env key '{name}' must be '<backend>/<scenario>', e.g. 'mpe/cooperative_navigation'"
    if not isinstance(component, type):
        return (
            f"{kind} '{name}' is {_describe(component)}, not a class; return the class itself, "
            f"e.g. {{'{name}': My{kind.capitalize()}}}"
        )
    base_path, options_base_path = _REQUIRED_BASES.get(kind, (None, None))
    if base_path is not None:
        base = _load(base_path)
        if not issubclass(component, base):
            return f"{kind} '{name}': {component.__name__} must subclass {_public_name(base)}"
    options = getattr(component, "Options", None)
    if options is None:
        return None
    if not (isinstance(options, type) and issubclass(options, BaseModel)):
        return (
            f"{kind} '{name}': {component.__name__}.Options must be a pydantic model class "
            f"(subclass marlplug.Options), got {_describe(options)}"
        )
    if options_base_path is not None:
        options_base = _load(options_base_path)
        if not issubclass(options, options_base):
            return (
                f"{kind} '{name}': {component.__name__}.Options ({options.__name__}) must subclass "
                f"{_public_name(options_base)}; declare it as "
                f"class {options.__name__}({options_base.__name__}): ..."
            )
    return _constructor_problem(kind, name, component, options)
