"""Which keyword options a VMAS scenario takes, and their defaults, read from its source.

VMAS scenarios take no declared parameters: ``make_world(self, batch_dim, device, **kwargs)`` reads
each option with ``kwargs.pop("name", default)`` (or ``kwargs.get``), sometimes in a helper method
(football's and road_traffic's ``init_params``), and warns about leftovers with
``ScenarioUtils.check_kwargs_consumed`` only after the world is half built. Reading those calls from
the module's syntax tree names every option before anything runs, so a config's typo is a one-line
error with the valid names. This module imports neither torch nor vmas: ``marlplug plugins`` stays
fast.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The VMAS lists marlplug registers, and the package that holds each list's modules. The debug
#: scenarios (``vmas.debug_scenarios``) are left out: they test the simulator, not policies.
SCENARIO_LISTS = {"scenarios": "vmas.scenarios", "mpe_scenarios": "vmas.scenarios.mpe"}

#: The calls on ``kwargs`` that read an option.
_READS = frozenset({"pop", "get"})


@dataclass(frozen=True)
class KeywordOption:
    """One option a scenario's ``make_world`` reads.

    Args:
        name: the keyword.
        default: the default as a Python value, when the source writes a literal; else ``None``.
        literal: whether ``default`` is the scenario's default (False: it is computed, e.g.
            ``n_food`` defaults to ``n_agents``).
        source: the default as written in the source (``"n_agents"``, ``"torch.pi / 2"``).

    Examples:
        >>> KeywordOption("n_food", None, literal=False, source="n_agents").literal
        False
    """

    name: str
    default: Any
    literal: bool
    source: str


def _vmas_root() -> Path:
    spec = importlib.util.find_spec("vmas")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'vmas'")
    return Path(next(iter(spec.submodule_search_locations)))


def _listed_names(tree: ast.Module, variable: str) -> list[str] | None:
    """The string literals of ``variable = sorted([...])`` (or ``= [...]``) in ``tree``."""
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == variable for t in node.targets)
        ):
            continue
        value = node.value
        if isinstance(value, ast.Call) and value.args:
            value = value.args[0]
        try:
            names = ast.literal_eval(value)
        except ValueError:
            return None
        return sorted(str(name) for name in names)
    return None


@functools.cache
def scenario_names() -> dict[str, str]:
    """Every VMAS scenario marlplug registers -> the module that defines it.

    Read from ``vmas/__init__.py``'s ``scenarios`` and ``mpe_scenarios`` lists without importing
    vmas (importing it imports torch); if that file no longer spells the lists as literals, vmas
    is imported and asked.

    Examples:
        >>> names = scenario_names()
        >>> names["balance"], names["simple_spread"]
        ('vmas.scenarios.balance', 'vmas.scenarios.mpe.simple_spread')
    """
    tree = ast.parse((_vmas_root() / "__init__.py").read_text())
    modules: dict[str, str] = {}
    for variable, package in SCENARIO_LISTS.items():
        names = _listed_names(tree, variable)
        if names is None:
            import vmas

            names = list(getattr(vmas, variable))
        modules.update({name: f"{package}.{name}" for name in names})
    return dict(sorted(modules.items()))


def _reads_in(node: ast.AST) -> list[ast.Call]:
    return [
        call
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in _READS
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "kwargs"
        and call.args
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    ]


def _option(call: ast.Call) -> KeywordOption:
    name = call.args[0]
    assert isinstance(name, ast.Constant)
    default_node = call.args[1] if len(call.args) > 1 else None
    if default_node is None:  # kwargs.get("x") defaults to None
        return KeywordOption(str(name.value), None, literal=True, source="None")
    source = ast.unparse(default_node)
    try:
        return KeywordOption(str(name.value), ast.literal_eval(default_node), True, source)
    except ValueError:
        return KeywordOption(str(name.value), None, literal=False, source=source)


@functools.cache
def scenario_keywords(scenario: str) -> dict[str, KeywordOption]:
    """The keyword options VMAS scenario ``scenario`` reads, in the order its source reads them.

    Only the module's ``Scenario`` class is read (its helper classes take their own ``kwargs``);
    the first read of a name gives its default.

    Raises:
        KeyError: ``scenario`` is not one of :func:`scenario_names`.

    Examples:
        >>> options = scenario_keywords("balance")
        >>> {name: option.default for name, option in options.items()}
        {'n_agents': 3, 'package_mass': 5, 'random_package_pos_on_line': True}
        >>> scenario_keywords("dispersion")["n_food"].source
        'n_agents'
    """
    module = scenario_names()[scenario]
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"No module named '{module}'")
    tree = ast.parse(Path(spec.origin).read_text())
    classes: list[ast.AST] = [
        node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Scenario"
    ]
    calls = [call for node in classes or [tree] for call in _reads_in(node)]
    calls.sort(key=lambda call: (call.lineno, call.col_offset))
    options: dict[str, KeywordOption] = {}
    for call in calls:
        option = _option(call)
        options.setdefault(option.name, option)
    return options


def class_name(scenario: str) -> str:
    """The class name marlplug gives VMAS scenario ``scenario``.

    Examples:
        >>> class_name("ball_passage")
        'BallPassage'
    """
    return "".join(part.capitalize() for part in re.split(r"[_\W]+", scenario) if part)
