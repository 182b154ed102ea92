"""``marlplug plugins``: every installed plugin, its hooks, components and load error."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from marlplug.plugins import KIND_HOOKS, PluginManager


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list for tools.")
@click.option(
    "--check",
    is_flag=True,
    help="Also import every component now (plugins may defer that to first use) and report failures.",
)
def plugins(as_json: bool, check: bool) -> None:
    """List installed plugins: distribution, version, hooks, components by kind, load errors."""
    # A fresh manager: this command reports on plugins even when strict mode would refuse them.
    manager = PluginManager.from_entry_points(strict=False)
    if check:
        manager.import_components()
    report = manager.report()
    if as_json:
        click.echo(json.dumps([info.as_json() for info in report], indent=2))
        return
    table = Table(title="marlplug plugins", show_lines=False)
    for column in ("plugin", "distribution", "version", "hooks", "components", "status"):
        table.add_column(column, overflow="fold")
    for info in report:
        components = "\n".join(
            f"{kind}: {', '.join(info.components[kind])}"
            for kind in KIND_HOOKS
            if kind in info.components
        )
        status = f"[red]{info.error}[/red]" if info.error else "[green]ok[/green]"
        hooks = "\n".join(info.hooks)
        table.add_row(info.name, info.distribution, info.version, hooks, components, status)
    Console(width=max(Console().width, 140)).print(table)
    failed = [info.name for info in report if info.error]
    if failed:
        click.echo(f"{len(failed)} plugin(s) failed to load: {', '.join(failed)}", err=True)
