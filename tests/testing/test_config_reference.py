"""``marlplug config reference`` lists installed and in-process plugins' components by default;
``--builtins-only --out`` writes exactly the docs' pages (docs/reference/config.md and config-envs.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import marlplug
from marlplug.coding import ReplicationCode
from marlplug.testing import register_plugin

DOCS = Path(__file__).resolve().parents[2] / "docs"


class ScratchReplication(ReplicationCode):
    """Replication, registered under another name for one test."""


@marlplug.hookimpl
def marlplug_codes() -> Mapping[str, Any]:
    return {"scratch_replication": ScratchReplication}


def test_installed_and_registered_plugins_are_listed(run_cli: Callable[..., Any]) -> None:
    with register_plugin(SimpleNamespace(marlplug_codes=marlplug_codes), name="scratch"):
        result = run_cli("config", "reference")
    assert result.exit_code == 0
    cka = result.out.split("### `cka`", 1)[1].split("###", 1)[0]
    assert "From the plugin distribution `marlplug-cka`." in cka
    assert "| `coef` |" in cka
    assert "### `scratch_replication`" in result.out
    assert "### `vmas/keep_away`" in result.out


def test_builtins_only_is_the_generated_doc(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    result = run_cli("config", "reference", "--builtins-only")
    assert result.exit_code == 0
    assert "### `cka`" not in result.out and "From the plugin" not in result.out
    written = run_cli("config", "reference", "--builtins-only", "--out", str(tmp_path))
    assert written.exit_code == 0
    pages = sorted(path.name for path in tmp_path.iterdir())
    assert pages == ["config-envs.md", "config.md"]
    for name in pages:
        assert (tmp_path / name).read_text() == (DOCS / "reference" / name).read_text(), name
    # The two pages hold the printed reference, every component once.
    both = "".join((tmp_path / name).read_text() for name in pages)
    for heading in (line for line in result.out.splitlines() if line.startswith("### ")):
        assert both.count(heading + "\n") == 1, heading
