"""``marlplug bench ...`` progress bars: drawn on stderr when it is a terminal, counted to the end,
and never in ``--json`` output on stdout."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from marlplug.envs import available_envs

BACKENDS = [b for b in ("mpe", "vmas") if b in available_envs()]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# name, the smallest useful arguments, the steps its bar must count to.
BENCHES = [
    ("loss", "--agents 2 --agents 3 --rows 40 --hidden 8 --repeats 2", 2 * 2),  # M values x repeats
    ("decode", "--params 2000 --repeats 2", 6 * 2),  # methods x repeats
    (
        "envs",
        "--agents 2 --scenario keep_away --steps 2 --trials 3 --vmas-envs 4",
        len(BACKENDS) * 3,  # scenarios x agent counts x backends x trials
    ),
    (
        "coding",
        "--scenario cooperative_navigation --agents 3 --learners 5 --rounds 2 "
        "--minibatch-size 64 --code uncoded --code mds",
        2,  # settings x rounds
    ),
    (
        "train",
        "--agents 2 --updates 1 --frames-per-batch 50 --minibatch 25 --epochs 1 --trials 1",
        2,  # trials x sides
    ),
]


def _drain(master: int, chunks: list[bytes], stop: threading.Event) -> None:
    # Read the terminal while it is written (a full pty buffer would block the bench) until told to
    # stop and nothing is left. Not until EOF: child processes the bench starts may keep the
    # terminal open (multiprocessing's resource tracker inherits stderr and outlives the test).
    # "Nothing left" means a second of quiet after the stop: the kernel hands pty output to the
    # master side from a work queue, which on a loaded machine can lag the writer's last flush
    # (the final frame went missing with a 50 ms wait).
    while True:
        if select.select([master], [], [], 1.0 if stop.is_set() else 0.05)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: every writer is gone
                return
            chunks.append(chunk)
        elif stop.is_set():
            return


@contextmanager
def stderr_on_a_terminal() -> Iterator[Callable[[], str]]:
    """Point ``sys.stderr`` at a real pseudo-terminal; yields a function returning what it got."""
    master, slave = pty.openpty()
    chunks: list[bytes] = []
    stop = threading.Event()
    reader = threading.Thread(target=_drain, args=(master, chunks, stop), daemon=True)
    reader.start()
    terminal = os.fdopen(slave, "w", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stderr", terminal)
        patch.setenv("TERM", "xterm-256color")
        patch.setenv("COLUMNS", "160")  # wide enough that no column is cut
        patch.delenv("TTY_COMPATIBLE", raising=False)
        try:
            yield lambda: b"".join(chunks).decode(errors="replace")
        finally:
            patch.undo()
            terminal.close()  # flushes: what the bench wrote is now waiting at the master
            stop.set()
            reader.join(timeout=10)
            os.close(master)


def frame_counts(screen: str, label: str) -> list[tuple[int, int]]:
    """``(done, total)`` of every frame of the bar ``label`` (the count is the first ``n/m``)."""
    frames = [ANSI.sub("", frame) for frame in re.split(r"\r|\n", screen)]
    found = [re.search(rf"{label}\D*?(\d+)/(\d+)", frame) for frame in frames]
    return [(int(match[1]), int(match[2])) for match in found if match]


@pytest.mark.parametrize(("name", "args", "total"), BENCHES, ids=[b[0] for b in BENCHES])
def test_bar_counts_to_the_end_on_stderr_and_json_stays_clean(
    run_cli: Callable[..., Any], name: str, args: str, total: int
) -> None:
    with stderr_on_a_terminal() as screen:
        result = run_cli("bench", name, *args.split(), "--json")
    assert result.exit_code == 0, screen()
    json.loads(result.out)  # stdout is one JSON document and nothing else
    assert "\x1b" not in result.out and f"bench {name}" not in result.out
    counts = frame_counts(screen(), f"bench {name}")
    assert counts, f"no progress bar on the terminal: {screen()!r}"
    assert {frame_total for _, frame_total in counts} == {total}
    assert counts[0][0] == 0 and counts[-1] == (total, total)
    assert [done for done, _ in counts] == sorted(done for done, _ in counts)


def test_no_bar_when_stderr_is_not_a_terminal(run_cli: Callable[..., Any]) -> None:
    name, args, _ = BENCHES[0]
    result = run_cli("bench", name, *args.split(), "--json")  # capsys: stderr is no terminal
    assert result.exit_code == 0, result.err
    assert len(json.loads(result.out)) == 2
    assert result.err == ""
