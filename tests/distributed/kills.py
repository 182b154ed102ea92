"""Learner kills for fault tests: a thread that kills one learner at a time at seeded random intervals,
from the moment the first learner exists (start-up included) until it is stopped.

Where the kills land depends on the machine's speed; what a test asserts must not (a coded run ends
where the centralized run ends, wherever its learners were killed).
"""

from __future__ import annotations

import os
import random
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType


class RandomKills:
    """Kill ``kill(victim)`` one of ``victims()`` every ``interval_s`` (uniform) seconds.

    The first victim is killed as soon as one exists (learners are then starting); ``killed``
    lists every victim killed, in order. Use it as a context manager around the run.

    Args:
        victims: what can be killed now (process ids, learner indices, ...).
        kill: kills one; returns False when it was gone already (not counted).
        seed: the draws of intervals and victims.
        interval_s: ``(shortest, longest)`` wait between two kills.
    """

    def __init__(
        self,
        victims: Callable[[], list[int]],
        kill: Callable[[int], bool],
        *,
        seed: int,
        interval_s: tuple[float, float],
    ) -> None:
        self.victims = victims
        self.kill = kill
        self.interval_s = interval_s
        self.killed: list[int] = []
        self._random = random.Random(seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="random-kills", daemon=True)

    def __enter__(self) -> RandomKills:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        first = True
        while not self._stop.is_set():
            victims = sorted(self.victims())
            if not victims:
                self._stop.wait(0.005)
                continue
            if not first and self._stop.wait(self._random.uniform(*self.interval_s)):
                return
            victims = victims if first else sorted(self.victims())
            if not victims:
                continue
            victim = self._random.choice(victims)
            if self.kill(victim):
                self.killed.append(victim)
                first = False


def sigkill(pid: int) -> bool:
    """SIGKILL process ``pid``; False if it is gone already."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def _stat(pid: int) -> tuple[int, str] | None:
    """``(parent pid, command line)`` of ``pid``, or None once it has exited."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1]), command


def local_learner_pids() -> list[int]:
    """The local backend's learner processes of this process: the children of its fork server
    (``multiprocessing.forkserver``, itself a child of this process; learners are forks of it)."""
    table = {
        int(entry.name): _stat(int(entry.name))
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
    }
    me = os.getpid()
    servers = {
        pid
        for pid, found in table.items()
        if found is not None and found[0] == me and "multiprocessing.forkserver" in found[1]
    }
    return [pid for pid, found in table.items() if found is not None and found[0] in servers]
