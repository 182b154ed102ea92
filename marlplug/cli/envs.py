"""``marlplug envs``: every installed scenario on every backend, with its parameters and defaults."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from marlplug.envs.factory import available_envs, get_scenario
from marlplug.errors import PluginError


def _parameters(name: str, backend: str) -> list[dict[str, Any]]:
    options = get_scenario(name, backend=backend).Options
    return [
        {
            "name": field_name,
            "type": getattr(info.annotation, "__name__", str(info.annotation)),
            "default": info.get_default(call_default_factory=True),
            "description": info.description or "",
        }
        for field_name, info in options.model_fields.items()
    ]


def envs_report() -> list[dict[str, Any]]:
    """One entry per ``backend/scenario``: summary and parameters with defaults."""
    report = []
    for backend, scenarios in available_envs().items():
        for name in scenarios:
            try:  # a lazily registered env is imported here and may fail alone
                scenario = get_scenario(name, backend=backend)
            except PluginError as exc:
                click.echo(f"warning: skipped {backend}/{name}: {exc}", err=True)
                continue
            report.append(
                {
                    "name": name,
                    "backend": backend,
                    "registry_key": f"{backend}/{name}",
                    "summary": scenario.summary,
                    "parameters": _parameters(name, backend),
                }
            )
    return report


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list for tools.")
def envs(as_json: bool) -> None:
    """List scenarios of every installed backend with their parameters and defaults."""
    report = envs_report()
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
        return
    table = Table(title="marlplug environments  (config: env: {name: ..., backend: ..., ...})")
    for column in ("scenario", "backend", "parameters (default)", "description"):
        table.add_column(column, overflow="fold")
    for entry in report:
        parameters = "\n".join(f"{p['name']} = {p['default']!r}" for p in entry["parameters"])
        table.add_row(entry["name"], entry["backend"], parameters, entry["summary"])
    Console(width=max(Console().width, 140)).print(table)
