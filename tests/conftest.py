"""Shared fixtures: run the CLI in-process and capture what a user would see."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from marlplug.cli.main import main

# A package that fails to import on purpose; tests install it with pip, pytest must not import it.
collect_ignore = ["plugins/broken_plugin"]


@dataclass
class CliResult:
    exit_code: int
    out: str
    err: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Call ``marlplug ARGS...`` in this process; returns exit code, stdout and stderr."""

    def run(*args: str) -> CliResult:
        code = main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
