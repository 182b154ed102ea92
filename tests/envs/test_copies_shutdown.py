"""Env copies in worker processes leave no process behind, however the process that made them
ends: the env closed, not closed at exit, an exception, Ctrl-C (SIGINT to the whole process group,
as a terminal sends it) or SIGKILL of the main process.

Each case runs tests/envs/copies_shutdown.py in a new session and watches its workers' ids.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("copies_shutdown.py")
#: How long the workers may take to end after the main process did (TorchRL's own shutdown
#: timeout is 10 s; a worker whose main process was killed ends on its closed pipe).
GONE_WITHIN_S = 30.0


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has ended: only its exit status is left to collect)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def wait_gone(pids: list[int]) -> list[int]:
    deadline = time.monotonic() + GONE_WITHIN_S
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [pid for pid in pids if alive(pid)]


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["close", "exit", "crash", "ctrl-c", "sigkill"])
def test_no_worker_outlives_the_main_process(ending: str) -> None:
    mode = {"ctrl-c": "wait", "sigkill": "wait"}.get(ending, ending)
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    pids: list[int] = []
    try:
        assert process.stdout is not None
        pids = [int(pid) for pid in process.stdout.readline().split()]
        assert len(pids) == 2 and all(alive(pid) for pid in pids)
        if mode == "wait":
            assert process.stdout.readline().strip() == "stepping"
            if ending == "ctrl-c":
                os.killpg(process.pid, signal.SIGINT)
            else:
                process.kill()
        _, stderr = process.communicate(timeout=60)
        assert wait_gone(pids) == [], f"workers left running after '{ending}'"
        expected_status = {"close": 0, "exit": 0, "crash": 1, "ctrl-c": 1, "sigkill": -9}
        assert process.returncode == expected_status[ending], stderr
        if ending == "ctrl-c":
            # the workers ignore Ctrl-C: one traceback, the main process's, and no worker's
            assert stderr.count("KeyboardInterrupt") == 1 and "SpawnProcess" not in stderr, stderr
        if ending == "crash":
            assert "RuntimeError: a crash while stepping" in stderr
    finally:
        for pid in [process.pid, *pids]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=10)
