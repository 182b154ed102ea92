"""No import cycle between marlplug's modules, top-level and function-level imports alike.

The layer contracts themselves are ``[tool.importlinter]`` in pyproject.toml (``lint-imports``); a
layers contract does not see a cycle between two modules of one layer, so this test looks at every
pair. Imports under ``if TYPE_CHECKING:`` count too: they never run, but two modules that name each
other's types are still one design in two files (MADDPG's options once lived beside its plugin and
were imported back that way; they have their own module now).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (the test extra)")

#: Cycles tolerated for now, each the set of modules of one cycle (none: keep it that way; the test
#: fails on an entry that no longer exists, so it cannot rot).
KNOWN_CYCLES: list[frozenset[str]] = []


def module_cycles(package: str) -> list[frozenset[str]]:
    """Every set of ``package``'s modules that import each other in a circle (the strongly
    connected components of the import graph with more than one module), sorted by first module.
    ``package`` is a top-level package importable from ``sys.path``."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[frozenset[str]] = []

    def visit(root: str) -> None:
        # Tarjan's algorithm with an explicit stack (the graph is deep enough for recursion limits).
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = lowlink[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = lowlink[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    lowlink[module] = min(lowlink[module], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[module])
            if lowlink[module] == index[module]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == module:
                        break
                if len(component) > 1:
                    cycles.append(frozenset(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return sorted(cycles, key=sorted)


def _describe(cycles: list[frozenset[str]]) -> str:
    return "; ".join(" <-> ".join(sorted(cycle)) for cycle in cycles) or "none"


def test_no_import_cycle_between_marlplug_modules() -> None:
    cycles = module_cycles("marlplug")
    new = [cycle for cycle in cycles if cycle not in KNOWN_CYCLES]
    gone = [cycle for cycle in KNOWN_CYCLES if cycle not in cycles]
    assert not new, f"import cycles between marlplug modules: {_describe(new)}"
    assert not gone, f"remove from KNOWN_CYCLES (no longer a cycle): {_describe(gone)}"


def _write_package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_a_cycle_through_a_function_level_import_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check sees lazy imports (the usual way a cycle is hidden) and TYPE_CHECKING ones."""
    _write_package(
        tmp_path,
        {
            "cyclepkg/__init__.py": "",
            "cyclepkg/low.py": """
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from cyclepkg import typed_only

                def helper():
                    from cyclepkg import high  # lazy, still a cycle
                    return high
            """,
            "cyclepkg/high.py": "from cyclepkg import low\n",
            "cyclepkg/typed_only.py": "from cyclepkg import low\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # low -> high -> low (lazily) and low -> typed_only -> low (in type hints): one circle of three.
    assert module_cycles("cyclepkg") == [
        frozenset({"cyclepkg.low", "cyclepkg.high", "cyclepkg.typed_only"})
    ]
