"""The ``local`` backend: one worker process per learner on this machine, nothing to start by hand.

The state rows and the minibatch live in shared memory, written once per round into one of two slots guarded by a
round stamp (a seqlock: a worker that finds the stamp changed while copying drops the stale task).
Tasks and results travel over one pipe pair per worker, so a killed worker shows up as a closed pipe
and cannot leave a lock held for the others. One reader thread per worker receives its results into
a queue: a worker frozen halfway through sending an answer (larger than the pipe's buffer) blocks
only its reader, never the controller's wait for a decodable set.

A worker (:mod:`~marlplug.distributed.backends.local_worker`) loads its program (sent pickled) before
it says it is ready; if that fails it sends the traceback and exits, so a learner that cannot start is
told apart from one killed from outside (a signal: a negative exit code) and named with its cause.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import signal
import threading
import time
from typing import Any

import torch
import torch.multiprocessing as torch_mp
from tensordict import TensorDictBase

from marlplug.algorithms.protocol import LearnerProgram
from marlplug.distributed.backends.base import BackendEvent, LearnerFailure, LearnerReady, Task
from marlplug.distributed.backends.local_worker import SLOTS, from_pipe, worker_main
from marlplug.distributed.learner import LearnerResult
from marlplug.distributed.learner_starts import LearnerStartError

__all__ = ["SLOTS", "LearnerStartError", "LocalBackend"]

#: What the fork server imports once, before it forks any learner: this module (and the worker's),
#: the modules a built-in algorithm's program needs when a learner loads it (3-4 s of imports,
#: torchrl's among them), and pandas, which tensordict's ``TensorDict.from_any`` imports (where it
#: is installed) in a learner's first PPO update (0.8 s; 3 s on a busy machine). Every learner start
#: and restart would repeat them otherwise. A module that is not installed is skipped.
PRELOAD = (
    __name__,
    "marlplug.algorithms.maddpg.program",
    "marlplug.algorithms.ppo.program",
    "marlplug.algorithms.q.program",
    "marlplug.algorithms.sac.program",
    "pandas",
)


class LocalBackend:
    """Learners as worker processes (forked from a fork server) with shared-memory state and batch.

    Args:
        num_learners: how many worker processes N.
        start_timeout_s: how long the controller waits for enough workers to be ready before the
            first round.

    Examples:
        >>> backend = LocalBackend(num_learners=2)  # doctest: +SKIP
        >>> backend.start(program)  # doctest: +SKIP
        >>> backend.close()  # doctest: +SKIP
    """

    name = "local"

    def __init__(self, num_learners: int, *, start_timeout_s: float = 120.0) -> None:
        self.num_learners = num_learners
        self.start_timeout_s = start_timeout_s
        # A fork server imports torch and marlplug once; each learner (and each restart) is then a
        # cheap fork of it instead of a fresh interpreter (seconds per learner on a busy machine).
        self._context = torch_mp.get_context("forkserver")
        self._context.set_forkserver_preload(list(PRELOAD))
        self._processes: dict[int, Any] = {}
        self._task_conns: dict[int, Any] = {}
        self._result_conns: dict[int, Any] = {}
        self._program: bytes | None = None
        self._state: torch.Tensor | None = None
        self._batch: dict[Any, torch.Tensor] = {}
        self._batch_size: list[int] = []
        self._stamps = torch.full((SLOTS,), -1, dtype=torch.int64).share_memory_()
        self._closed = False
        #: ``(learner, generation, message or None at end of pipe)`` from the reader threads; a
        #: restarted learner's new pipe has a new generation, so its old reader's end is ignored.
        self._inbox: queue.Queue[tuple[int, int, Any]] = queue.Queue()
        self._generation: dict[int, int] = {}
        #: Learners whose current process said it is ready; the traceback of one that could not.
        self._ready: set[int] = set()
        self._start_errors: dict[int, str] = {}
        #: Learners whose process could not be started at all, and why (see _spawn).
        self._failed_starts: list[tuple[int, str]] = []

    # ------------------------------------------------------------------ lifecycle

    def start(self, program: LearnerProgram) -> None:
        # Pickled once, here: a program that does not pickle fails now, in the controller, and
        # one that does not load in a worker fails there with its traceback (see local_worker).
        self._program = pickle.dumps(program)

    def prepare(self, state: torch.Tensor, batch: TensorDictBase) -> None:
        """Allocate the shared slots for these shapes and start the workers (once, without waiting
        for them: each reports :class:`LearnerReady` through :meth:`poll`)."""
        if self._state is not None:
            return
        self._state = torch.zeros(SLOTS, *state.shape, dtype=state.dtype).share_memory_()
        self._batch_size = list(batch.batch_size)
        for key, value in batch.items(include_nested=True, leaves_only=True):
            self._batch[key] = torch.zeros(SLOTS, *value.shape, dtype=value.dtype).share_memory_()
        for learner in range(self.num_learners):
            self._spawn(learner)

    def _spawn(self, learner: int) -> None:
        assert self._program is not None and self._state is not None
        task_recv, task_send = self._context.Pipe(duplex=False)
        result_recv, result_send = self._context.Pipe(duplex=False)
        process = self._context.Process(
            target=worker_main,
            args=(
                learner,
                self._program,
                self._state,
                self._batch,
                self._batch_size,
                self._stamps,
                task_recv,
                result_send,
                os.getpid(),
            ),
            name=f"marlplug-learner-{learner}",
            daemon=True,
        )
        try:
            process.start()
        except (OSError, EOFError) as error:
            # The fork server is gone, or going (killed, or exiting): a start that failed from
            # outside, reported as such by the next poll. A later start launches a new fork server.
            for conn in (task_recv, task_send, result_recv, result_send):
                conn.close()
            self._processes.pop(learner, None)
            self._ready.discard(learner)
            self._failed_starts.append((learner, f"could not start its process: {error}"))
            return
        task_recv.close()
        result_send.close()
        self._processes[learner] = process
        self._task_conns[learner] = task_send
        self._result_conns[learner] = result_recv
        self._ready.discard(learner)
        self._start_errors.pop(learner, None)
        generation = self._generation.get(learner, -1) + 1
        self._generation[learner] = generation
        threading.Thread(
            target=_read_results,
            args=(learner, generation, result_recv, self._inbox),
            name=f"marlplug-learner-{learner}-results",
            daemon=True,
        ).start()

    def restart(self, learner: int) -> None:
        old = self._processes.get(learner)
        if old is not None and old.is_alive():
            old.kill()
        if old is not None:
            old.join(timeout=5)
        for conns in (self._task_conns, self._result_conns):
            conn = conns.pop(learner, None)
            if conn is not None:
                conn.close()
        self._spawn(learner)

    def pid(self, learner: int) -> int:
        """The operating-system process id of learner ``learner`` (for fault-injection tests)."""
        return int(self._processes[learner].pid)

    def pids(self) -> dict[int, int]:
        """The process id of every learner process started and still running (any thread may ask)."""
        return {
            learner: int(process.pid)
            for learner, process in list(self._processes.items())
            if process.pid is not None and process.is_alive()
        }

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for conn in self._task_conns.values():
            with contextlib.suppress(OSError, BrokenPipeError):
                conn.send(("stop",))
        deadline = time.monotonic() + 5.0
        for process in self._processes.values():
            process.join(timeout=max(0.0, deadline - time.monotonic()))
        for process in self._processes.values():
            if process.is_alive():
                process.kill()
                process.join(timeout=5)
        for conn in [*self._task_conns.values(), *self._result_conns.values()]:
            conn.close()
        self._processes.clear()
        self._task_conns.clear()
        self._result_conns.clear()

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # ------------------------------------------------------------------ rounds

    def broadcast(self, round_index: int, state: torch.Tensor, batch: TensorDictBase) -> None:
        self.prepare(state, batch)
        assert self._state is not None
        slot = round_index % SLOTS
        self._stamps[slot] = -1
        self._state[slot].copy_(state)
        for key, buffer in self._batch.items():
            buffer[slot].copy_(batch[key])
        self._stamps[slot] = round_index

    def submit(self, task: Task) -> None:
        conn = self._task_conns.get(task.learner)
        if conn is None:
            return
        with contextlib.suppress(OSError, BrokenPipeError):
            conn.send(("task", task.round_index, task.task_id, task.row, task.seed, task.delay_s))

    def alive(self, learner: int) -> bool:
        """Whether learner ``learner``'s process is running."""
        process = self._processes.get(learner)
        return process is not None and process.is_alive()

    def poll(self, timeout_s: float) -> list[BackendEvent]:
        events: list[BackendEvent] = [
            LearnerFailure(learner, None, message, True, while_starting=True, own_fault=False)
            for learner, message in self._failed_starts
        ]
        self._failed_starts.clear()
        try:
            received = [self._inbox.get(timeout=0.0 if events else max(0.0, timeout_s))]
        except queue.Empty:
            return events
        with contextlib.suppress(queue.Empty):
            while True:
                received.append(self._inbox.get_nowait())
        for learner, generation, message in received:
            if generation != self._generation.get(learner) or learner not in self._result_conns:
                continue  # the end of a pipe already replaced or closed
            if message is None:
                events.append(self._death(learner))
                self._result_conns.pop(learner).close()
                continue
            kind = message[0]
            if kind == "ready":
                self._ready.add(learner)
                events.append(LearnerReady(learner))
            elif kind == "start-failed":
                self._start_errors[learner] = message[2]  # its death (end of pipe) follows
            elif kind == "result":
                _, _, round_index, task_id, answer = message
                events.append(LearnerResult(learner, round_index, task_id, from_pipe(answer)))
            elif kind == "error":
                events.append(LearnerFailure(learner, message[2], str(message[4]), died=False))
        return events

    def _death(self, learner: int) -> LearnerFailure:
        """What a learner's closed pipe means: how its process ended, and whose fault that was."""
        process = self._processes[learner]
        process.join(timeout=1)
        traceback_text = self._start_errors.pop(learner, None)
        starting = learner not in self._ready
        if traceback_text is not None:
            return LearnerFailure(learner, None, traceback_text, True, starting, own_fault=True)
        return LearnerFailure(
            learner, None, exit_description(process.exitcode), True, starting, own_fault=False
        )


def exit_description(exitcode: int | None) -> str:
    """How a worker process ended, from its exit code (negative: the signal that killed it).

    Examples:
        >>> exit_description(-9), exit_description(1)
        ('process killed by SIGKILL', 'process exited (code 1)')
    """
    if exitcode is not None and exitcode < 0:
        with contextlib.suppress(ValueError):
            return f"process killed by {signal.Signals(-exitcode).name}"
    return f"process exited (code {exitcode})"


def _read_results(
    learner: int, generation: int, conn: Any, inbox: queue.Queue[tuple[int, int, Any]]
) -> None:
    """A reader thread: every message of one learner's result pipe into ``inbox``, then ``None``."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError, ValueError, TypeError):
            inbox.put((learner, generation, None))
            return
        inbox.put((learner, generation, message))
