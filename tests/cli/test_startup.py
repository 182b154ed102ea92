"""``marlplug --help`` and ``marlplug plugins`` start without torch; ``marlplug bench cli`` times them.

No timing is asserted (the suite runs on loaded machines): what keeps start-up fast is that these
commands never import the heavy libraries, which a fresh process shows in ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import click
import pytest

from marlplug.cli.bench import BENCHMARKS
from marlplug.cli.main import COMMANDS, LazyCommand

HEAVY = ("torch", "torchrl", "tensordict", "ray", "vmas", "pettingzoo", "mpe2", "matplotlib")

# Runs the CLI in a fresh interpreter, then prints which heavy modules it imported.
PROBE = f"""
import sys
from marlplug.cli.main import main
status = main(sys.argv[1:])
print("HEAVY:" + ",".join(m for m in {HEAVY!r} if m in sys.modules), "STATUS:" + str(status))
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["plugins"],
        ["plugins", "--json"],
        ["train", "--help"],
        ["bench", "--help"],
        ["config", "--help"],
    ],
    ids=" ".join,
)
def test_command_does_not_import_heavy_modules(args: list[str]) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    last = completed.stdout.strip().splitlines()[-1]
    assert last == "HEAVY: STATUS:0", f"marlplug {' '.join(args)} imported: {last}"


@pytest.mark.parametrize(
    ("name", "lazy"),
    [*COMMANDS.items(), *(("bench " + name, lazy) for name, lazy in BENCHMARKS.items())],
)
def test_listed_help_is_the_commands_own(name: str, lazy: LazyCommand) -> None:
    command = lazy.load()
    assert lazy.help == command.get_short_help_str(limit=1000)


def test_group_help_lists_every_command(run_cli: Callable[..., Any]) -> None:
    result = run_cli("--help")
    assert result.exit_code == 0
    for name in COMMANDS:
        assert f"\n  {name} " in result.out


def test_train_help_shows_config_as_optional(run_cli: Callable[..., Any]) -> None:
    result = run_cli("train", "--help")
    assert "Usage: marlplug train [OPTIONS] [CONFIG]" in result.out


def test_bench_cli_times_commands_against_python(run_cli: Callable[..., Any]) -> None:
    result = run_cli("bench", "cli", "--repeats", "2", "--command", "--version", "--json")
    assert result.exit_code == 0, result.err
    rows = json.loads(result.out)
    assert [row["command"] for row in rows] == ["python -c pass", "marlplug --version"]
    assert rows[0]["ratio"] == 1.0
    for row in rows:
        assert len(row["times_s"]) == 2
        assert 0 < row["min_s"] <= row["median_s"]


def test_bench_cli_reports_a_failing_command(run_cli: Callable[..., Any]) -> None:
    result = run_cli("bench", "cli", "--repeats", "1", "--command", "no-such-command")
    assert result.exit_code == 2
    assert "'marlplug no-such-command' exited 2" in result.err


def test_lazy_command_load_returns_a_click_command() -> None:
    assert isinstance(COMMANDS["config"].load(), click.Group)
