"""Ctrl-C (SIGINT) and SIGTERM during training: finish the update under way, checkpoint, stop.

The first signal only sets a flag, so no update is left half done and the checkpoint holds the last
completed one; a second signal stops at once (``KeyboardInterrupt``), keeping the last checkpoint.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

#: The signals that stop a run gracefully; the exit status is 128 + the signal's number.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class StopRequest:
    """Set by the first stop signal: ``signal_number`` is the signal, ``None`` while running."""

    signal_number: int | None = None

    @property
    def requested(self) -> bool:
        return self.signal_number is not None


class TrainingInterrupted(KeyboardInterrupt):
    """A run stopped by a signal after checkpointing its last completed update.

    Attributes:
        signal_number: the signal (``signal.SIGINT`` for Ctrl-C).
        update: the updates (MADDPG: iterations) the checkpoint holds.
        unit: what one step of the run is called in the message (``update``, ``iteration``).
        checkpoint: the checkpoint file.
        run_dir: the run folder (``marlplug train --resume RUN_DIR`` continues it).

    Examples:
        >>> stop = TrainingInterrupted(signal.SIGINT, 7, Path("runs/a/checkpoint.pt"), Path("runs/a"))
        >>> stop.exit_status, str(stop)
        (130, 'interrupted after update 7: checkpoint runs/a/checkpoint.pt; resume with: marlplug train --resume runs/a')
    """

    def __init__(
        self,
        signal_number: int,
        update: int,
        checkpoint: Path,
        run_dir: Path,
        *,
        unit: str = "update",
    ) -> None:
        self.signal_number = signal_number
        self.update = update
        self.checkpoint = checkpoint
        self.run_dir = run_dir
        super().__init__(
            f"interrupted after {unit} {update}: checkpoint {checkpoint}; "
            f"resume with: marlplug train --resume {run_dir}"
        )

    @property
    def exit_status(self) -> int:
        """128 + the signal number, the shell's convention (130 for Ctrl-C)."""
        return 128 + self.signal_number


@contextmanager
def stop_requests() -> Iterator[StopRequest]:
    """Catch :data:`STOP_SIGNALS` while the block runs: the first one sets the yielded
    :class:`StopRequest`, a second raises ``KeyboardInterrupt``; the old handlers come back after.

    Outside the main thread (where Python cannot install handlers) the request is never set.

    Examples:
        >>> import os
        >>> with stop_requests() as stop:
        ...     os.kill(os.getpid(), signal.SIGTERM)
        ...     stop.requested
        True
    """
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def handle(signal_number: int, frame: FrameType | None) -> None:
        del frame
        if request.requested:
            raise KeyboardInterrupt
        request.signal_number = signal_number

    previous = {number: signal.signal(number, handle) for number in STOP_SIGNALS}
    try:
        yield request
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
