"""The docs cannot drift from the code: every hook is documented with its exact signature, and the
configuration reference is exactly what the schemas generate."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from marlplug import hookspecs
from marlplug.config.reference import render_reference
from marlplug.plugins import PluginManager

DOCS = Path(__file__).resolve().parents[1] / "docs"
HOOKS = [
    name for name, obj in vars(hookspecs).items() if name.startswith("marlplug_") and callable(obj)
]


def test_there_are_hooks() -> None:
    assert {"marlplug_envs", "marlplug_codes", "marlplug_losses", "marlplug_algorithms"} <= set(
        HOOKS
    )


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_with_its_signature(hook: str) -> None:
    text = (DOCS / "reference" / "hooks.md").read_text()
    function = getattr(hookspecs, hook)
    signature = str(inspect.signature(function)).replace("'", "")
    assert f"## {hook}\n" in text
    assert f"def {hook}{signature}" in text
    assert function.__doc__, f"{hook} needs a docstring in hookspecs.py"


def test_configuration_reference_is_generated_from_the_schemas() -> None:
    manager = PluginManager.from_entry_points(strict=False, disabled=set())
    expected = render_reference(manager, distributions={"marlplug"})
    actual = (DOCS / "reference" / "config.md").read_text()
    assert actual == expected, (
        "run: marlplug config reference --builtins-only > docs/reference/config.md"
    )
