"""`bash scripts/setup.sh` keeps pip quiet but says, one line on stderr before each step, what it is
installing (it used to print nothing for minutes), and skips a current .venv in one line.

It runs on a copy of the script with ``python3`` and ``pip`` stand-ins that record their arguments:
the real install downloads gigabytes (CI runs it for real, in scripts/test.sh).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Stand-ins: `python3 -m venv .venv` makes a .venv whose activate script puts a logging pip first
# on PATH; every call is appended to calls.log, so stderr and the calls can be interleaved.
PYTHON3 = """#!/usr/bin/env bash
if [[ "$1" == "--version" ]]; then echo "Python 3.11.0"; exit 0; fi
echo "python3 $*" >>"$CALLS"
if [[ "$1 $2" == "-m venv" ]]; then
    mkdir -p "$3/bin"
    printf 'export PATH="%s:$PATH"\\n' "$STUBS" >"$3/bin/activate"
    ln -sf "$STUBS/python3" "$3/bin/python"
fi
"""
PIP = """#!/usr/bin/env bash
echo "pip $*" >>"$CALLS"
"""


def _make_checkout(tmp_path: Path) -> Path:
    """A checkout with setup.sh, pyproject.toml and two plugins, and the stand-ins in stubs/."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", checkout / "scripts" / "setup.sh")
    shutil.copy(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    for name in ("marlplug-a", "marlplug-b"):
        (checkout / "plugins" / name).mkdir(parents=True)
        (checkout / "plugins" / name / "pyproject.toml").write_text(f"[project]\nname = '{name}'\n")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, text in (("python3", PYTHON3), ("pip", PIP)):
        (stubs / name).write_text(text)
        (stubs / name).chmod(stat.S_IRWXU)
    return checkout


def _run_setup(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    stubs, calls = tmp_path / "stubs", tmp_path / "calls.log"
    env = {
        **os.environ,
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "STUBS": str(stubs),
        "CALLS": str(calls),
        "MARLPLUG_FORCE_SETUP": "",
    }
    result = subprocess.run(
        ["bash", str(tmp_path / "checkout" / "scripts" / "setup.sh")],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    return result, calls.read_text().splitlines() if calls.exists() else []


def test_one_line_per_step_and_quiet_pip(tmp_path: Path) -> None:
    _make_checkout(tmp_path)
    result, calls = _run_setup(tmp_path)
    assert result.returncode == 0, result.stderr
    steps = result.stderr.splitlines()
    assert all(line.startswith("set-up: ") for line in steps), steps
    pip_calls = [call for call in calls if call.startswith("pip ")]
    assert pip_calls and all(" -q " in f"{call} " for call in pip_calls)
    # A line for the venv, then one before each pip call, then one when done.
    assert len(steps) == 1 + len(pip_calls) + 1
    assert steps[0] == "set-up: creating .venv"
    assert "installing torch 2.13.0 (CPU)" in steps[2] and "torch==2.13.0" in pip_calls[1]
    assert steps[3].startswith("set-up: installing marlplug with its extras (test,")
    assert steps[4:6] == [
        "set-up: installing plugin marlplug-a",
        "set-up: installing plugin marlplug-b",
    ]
    assert steps[-1].startswith("set-up: done")
    assert result.stdout == ""
    # Current: nothing is installed again, and it says so in one line.
    again, calls_again = _run_setup(tmp_path)
    assert again.returncode == 0 and calls_again == calls
    assert again.stderr.strip().startswith("set-up: .venv is current")
