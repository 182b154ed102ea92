"""``marlplug plugins``: every installed plugin, its status, hooks, components and problems.

A plugin's status is ``ok``, ``disabled`` (by ``MARLPLUG_DISABLE_PLUGINS``) or ``error`` (it failed to
load, or some of its components were skipped: a name clash, a component that breaks the contract).
With ``MARLPLUG_STRICT_PLUGINS=1`` the command exits with status 2 when any plugin has an error;
``--debug`` (or ``MARLPLUG_DEBUG=1``) prints each failing plugin's full traceback on stderr.
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from marlplug.errors import PluginError
from marlplug.plugins import (
    DEBUG_ENV_VAR,
    DISABLE_ENV_VAR,
    KIND_HOOKS,
    STRICT_ENV_VAR,
    PluginInfo,
    PluginManager,
)
from marlplug.switches import env_flag


def _status(info: PluginInfo) -> str:
    if info.disabled:
        return f"[yellow]disabled ({DISABLE_ENV_VAR})[/yellow]"
    if info.errors:
        return f"[red]{escape('; '.join(info.errors))}[/red]"
    return "[green]ok[/green]"


def _debug_requested() -> bool:
    """``marlplug --debug plugins`` or ``MARLPLUG_DEBUG=1``."""
    root = click.get_current_context().find_root()
    return bool(root.params.get("debug")) or env_flag(DEBUG_ENV_VAR)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list for tools.")
@click.option(
    "--check",
    is_flag=True,
    help="Also import every component now (plugins may defer that to first use) and report failures.",
)
def plugins(as_json: bool, check: bool) -> None:
    """List installed plugins: status, distribution, version, hooks, components, problems."""
    # A fresh, non-strict manager: this command reports every plugin, then applies strict mode.
    manager = PluginManager.from_entry_points(strict=False)
    if check or env_flag(STRICT_ENV_VAR):  # strict: a broken lazy component is a problem too
        manager.import_components()
    report = manager.report()
    if as_json:
        click.echo(json.dumps([info.as_json() for info in report], indent=2))
    else:
        table = Table(title="marlplug plugins", show_lines=False)
        for column in ("plugin", "distribution", "version", "hooks", "components", "status"):
            table.add_column(column, overflow="fold")
        for info in report:
            components = "\n".join(
                f"{kind}: {', '.join(info.components[kind])}"
                for kind in KIND_HOOKS
                if info.components.get(kind)
            )
            hooks = "\n".join(info.hooks)
            table.add_row(
                info.name, info.distribution, info.version, hooks, components, _status(info)
            )
        Console(width=max(Console().width, 140)).print(table)
    failed = manager.failures()
    if _debug_requested():
        for info in failed:
            if info.traceback:
                click.echo(f"--- {info.label()}:\n{info.traceback}", err=True)
    if not failed:
        return
    names = ", ".join(info.name for info in failed)
    if env_flag(STRICT_ENV_VAR):
        raise PluginError(
            f"{len(failed)} plugin(s) with errors ({names}) and {STRICT_ENV_VAR} is on; fix, "
            f"uninstall or disable them ({DISABLE_ENV_VAR}={failed[0].name})"
        )
    if not as_json:
        click.echo(f"{len(failed)} plugin(s) with errors: {names}", err=True)
