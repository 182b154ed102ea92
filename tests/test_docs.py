"""The docs cannot drift from the code: every hook is documented with its exact signature, the
configuration reference is exactly what the schemas generate, and the pages keep the site's sizes
(the README at most 120 lines, every page but the notebook's at most 500)."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

import pytest

from marlplug import hookspecs
from marlplug.config.reference import reference_pages, render_reference
from marlplug.plugins import PluginManager

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: The dated notebook (docs/notes/) may run long; every other page is read whole, so it stays short.
MAX_PAGE_LINES = 500
MAX_README_LINES = 120
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
    expected = reference_pages(render_reference(manager, distributions={"marlplug"}))
    for name, text in expected.items():
        assert (DOCS / "reference" / name).read_text() == text, (
            "run: marlplug config reference --builtins-only --out docs/reference"
        )


def test_pages_stay_short() -> None:
    long_pages = {
        page.relative_to(ROOT).as_posix(): lines
        for page in DOCS.rglob("*.md")
        if "notes" not in page.relative_to(DOCS).parts
        and (lines := len(page.read_text().splitlines())) > MAX_PAGE_LINES
    }
    assert not long_pages, (
        f"pages over {MAX_PAGE_LINES} lines (split them, or move history to docs/notes/): {long_pages}"
    )


def test_readme_links_resolve() -> None:
    """The README is read on the forge, outside the docs site's --strict build: check its links here."""
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    missing = [target for target in targets if "://" not in target and not (ROOT / target).exists()]
    assert targets and not missing, f"README.md links to missing files: {missing}"


def test_readme_stays_short() -> None:
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; the docs site holds the rest"


def test_api_pages_show_sphinx_roles_as_code() -> None:
    """The griffe extension mkdocs.yml loads for the API pages (docs/_ext/sphinx_roles.py)."""
    pytest.importorskip("griffe")  # the docs extra
    spec = importlib.util.spec_from_file_location("sphinx_roles", DOCS / "_ext" / "sphinx_roles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "see :meth:`~marlplug.losses.JointPPOLoss.agent_losses` and :data:`MAIN_PAGE`."
    assert module.roles_as_code(text) == "see `agent_losses` and `MAIN_PAGE`."


def test_the_api_reference_lists_the_public_api() -> None:
    import marlplug

    table = (DOCS / "reference" / "api" / "index.md").read_text().split("\n## ", 1)[0]
    listed = set(re.findall(r"`(\w+)`", table))
    missing = sorted(set(marlplug.__all__) - listed)
    assert not missing, (
        f"docs/reference/api/index.md does not say where these are documented: {missing}"
    )
