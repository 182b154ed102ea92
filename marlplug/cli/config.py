"""``marlplug config``: validate a config file and show it with every default filled in."""

from __future__ import annotations

import click
import yaml

from marlplug.config import load_config, resolved_dict
from marlplug.configs import default_config_path


@click.group()
def config() -> None:
    """Check and show config files."""


@config.command()
@click.argument("path", type=click.Path(dir_okay=False), required=False)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a value.")
def show(path: str | None, overrides: tuple[str, ...]) -> None:
    """Validate PATH (default: the packaged config `marlplug train` trains without CONFIG) and
    print the resolved config as YAML."""
    resolved = load_config(path or default_config_path(), overrides)
    click.echo(yaml.safe_dump(resolved_dict(resolved), sort_keys=False).rstrip())


@config.command()
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a value.")
def check(path: str, overrides: tuple[str, ...]) -> None:
    """Validate PATH; print 'ok' or the first problem with its full path."""
    load_config(path, overrides)
    click.echo(f"{path}: ok")


@config.command()
@click.option(
    "--builtins-only",
    is_flag=True,
    help="Only marlplug's own components (how the docs' reference pages are generated).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, writable=True),
    help="Write the reference as the docs' pages into this folder (config.md, and config-envs.md "
    "for the environments) instead of printing it: --builtins-only --out docs/reference.",
)
def reference(builtins_only: bool, out: str | None) -> None:
    """Print the configuration reference (Markdown) of marlplug and every installed plugin."""
    from pathlib import Path

    from marlplug.config.reference import BUILTIN_DISTRIBUTION, reference_pages, render_reference
    from marlplug.plugins import get_plugin_manager

    distributions = {BUILTIN_DISTRIBUTION} if builtins_only else None
    text = render_reference(get_plugin_manager(), distributions=distributions)
    if out is None:
        click.echo(text, nl=False)
        return
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for name, page in reference_pages(text).items():
        (folder / name).write_text(page)
        click.echo(f"wrote {folder / name}")
