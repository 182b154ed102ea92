"""Entry point of the ``marlplug`` command: the command group, lazy subcommands and error handling.

A user mistake (:class:`marlplug.errors.UserError` or a click usage error) prints one or two lines on
stderr and exits with status 2; ``--debug`` (or ``MARLPLUG_DEBUG=1``) shows the traceback instead.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

import click

from marlplug.cli.allocator import keep_freed_memory
from marlplug.errors import UserError
from marlplug.switches import env_flag


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when used (torch imports are slow)."""

    def __init__(self, *args: object, lazy_commands: dict[str, str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy_commands = lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            module_name, _, attribute = self.lazy_commands[cmd_name].partition(":")
            command = getattr(importlib.import_module(module_name), attribute)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)


#: ``marlplug <name>`` -> ``"module:click_command"``. Add a command by adding a line here.
COMMANDS = {
    "plugins": "marlplug.cli.plugins:plugins",
    "config": "marlplug.cli.config:config",
    "bench": "marlplug.cli.bench:bench",
    "train": "marlplug.cli.train:train",
    "codes": "marlplug.cli.codes:codes",
    "envs": "marlplug.cli.envs:envs",
    "render": "marlplug.cli.render:render",
}


@click.group(
    cls=LazyGroup, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option("--debug", is_flag=True, help="Show full tracebacks for errors.")
@click.version_option(package_name="marlplug")
def cli(debug: bool) -> None:
    """marlplug: plugin-based multi-agent RL on TorchRL."""
    del debug  # read in main() so errors raised before the group runs are covered too


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and turn user mistakes into exit status 2 with a short message."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or env_flag("MARLPLUG_DEBUG")
    # TorchRL logs INFO lines to stdout, which would corrupt `--json` output; read at its import.
    os.environ.setdefault("RL_LOGGING_LEVEL", "DEBUG" if debug else "WARNING")
    keep_freed_memory()
    try:
        # Non-standalone click returns a command's `click.exceptions.Exit(code)` as its result.
        status = cli.main(args=args, prog_name="marlplug", standalone_mode=False)
        if isinstance(status, int):
            return status
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except click.UsageError as exc:
        if debug:
            raise
        click.echo(f"error: {exc.format_message()}", err=True)
        if exc.ctx is not None:
            click.echo(f"Try '{exc.ctx.command_path} --help' for help.", err=True)
        return 2
    except click.ClickException as exc:
        if debug:
            raise
        click.echo(f"error: {exc.format_message()}", err=True)
        return 2
    except UserError as exc:
        if debug:
            raise
        click.echo(f"error: {exc}", err=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
