"""Entry point of the ``marlplug`` command: the command group, lazy subcommands and error handling.

A user mistake (:class:`marlplug.errors.UserError` or a click usage error) prints one or two lines on
stderr and exits with status 2; ``--debug`` (or ``MARLPLUG_DEBUG=1``) shows the traceback instead.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import click

from marlplug.cli.allocator import keep_freed_memory
from marlplug.config.checks import ConfigWarning
from marlplug.config.messages import printable
from marlplug.errors import UserError
from marlplug.switches import env_flag


@dataclass(frozen=True)
class LazyCommand:
    """A subcommand imported only when it runs; ``help`` is what the group's ``--help`` lists for it.

    The short help is written here, next to the import path, so that ``marlplug --help`` lists every
    command without importing any (a test checks it matches the command's own docstring).

    Example:
        >>> LazyCommand("marlplug.cli.config:config", "Check and show config files.").load().name
        'config'
    """

    target: str
    """``"module:click_command"``."""
    help: str
    """The command's short help, word for word (first sentence of its docstring)."""

    def load(self) -> click.Command:
        module_name, _, attribute = self.target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when used (torch imports take seconds)."""

    def __init__(
        self, *args: object, lazy_commands: dict[str, LazyCommand], **kwargs: object
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy_commands = lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            return self.lazy_commands[cmd_name].load()
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands with their stored short help; click's own version imports each one."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.lazy_commands:
                # Shortened the way click shortens a loaded command's help.
                stub = click.Command(name, help=self.lazy_commands[name].help)
                rows.append((name, stub.get_short_help_str(limit)))
                continue
            command = super().get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


#: ``marlplug <name>`` -> the command. Add a command by adding a line here.
COMMANDS = {
    "bench": LazyCommand(
        "marlplug.cli.bench:bench",
        "Measure speed; every benchmark runs its comparisons in one process and prints ratios.",
    ),
    "codes": LazyCommand(
        "marlplug.cli.codes:codes", "Coding schemes for coded distributed training."
    ),
    "compare": LazyCommand(
        "marlplug.cli.compare:compare",
        "Compare sweep results: IQM, mean, median with 95% intervals; P(improvement); a figure.",
    ),
    "config": LazyCommand("marlplug.cli.config:config", "Check and show config files."),
    "envs": LazyCommand(
        "marlplug.cli.envs:envs",
        "List scenarios of every installed backend with their parameters and defaults.",
    ),
    "evaluate": LazyCommand(
        "marlplug.cli.evaluate:evaluate",
        "Evaluate a trained run or a reference policy: mean and std of the episode return, per group.",
    ),
    "plugins": LazyCommand(
        "marlplug.cli.plugins:plugins",
        "List installed plugins: status, distribution, version, hooks, components, problems.",
    ),
    "render": LazyCommand(
        "marlplug.cli.render:render",
        "Write a GIF of one episode of CONFIG's environment (rendered with the mpe backend).",
    ),
    "sweep": LazyCommand(
        "marlplug.cli.sweep:sweep",
        "Train every grid configuration with every seed and evaluate each; results for `compare`.",
    ),
    "train": LazyCommand(
        "marlplug.cli.train:train",
        "Train with CONFIG (default: the packaged cooperative-navigation config).",
    ),
}


@click.group(
    cls=LazyGroup, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option("--debug", is_flag=True, help="Show full tracebacks for errors.")
@click.version_option(package_name="marlplug")
def cli(debug: bool) -> None:
    """marlplug: plugin-based multi-agent RL on TorchRL."""
    del debug  # read in main() so errors raised before the group runs are covered too


def _format_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
) -> str:
    """A config warning is one ``warning:`` line (no source location); others as Python prints them."""
    if issubclass(category, ConfigWarning):
        return f"warning: {printable(str(message), keep_newlines=False)}\n"
    return _python_format_warning(message, category, filename, lineno, line)


_python_format_warning = warnings.formatwarning


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and turn user mistakes into exit status 2 with a short message."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or env_flag("MARLPLUG_DEBUG")
    if debug:  # the plugin loader then logs each failing plugin's traceback (marlplug.plugins)
        os.environ["MARLPLUG_DEBUG"] = "1"
    # TorchRL logs INFO lines to stdout, which would corrupt `--json` output; read at its import.
    os.environ.setdefault("RL_LOGGING_LEVEL", "DEBUG" if debug else "WARNING")
    keep_freed_memory()
    warnings.formatwarning = _format_warning
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
        # The message may quote a config file's bytes: escape control characters.
        click.echo(f"error: {printable(str(exc))}", err=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
