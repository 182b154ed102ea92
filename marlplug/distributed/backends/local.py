"""The ``local`` backend: one worker process per learner on this machine, nothing to start by hand.

The state rows and the minibatch live in shared memory, written once per round into one of two slots guarded by a
round stamp (a seqlock: a worker that finds the stamp changed while copying drops the stale task).
Tasks and results travel over one pipe pair per worker, so a killed worker shows up as a closed pipe
and cannot leave a lock held for the others. One reader thread per worker receives its results into
a queue: a worker frozen halfway through sending an answer (larger than the pipe's buffer) blocks
only its reader, never the controller's wait for a decodable set.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
import traceback
from collections import deque
from typing import Any

import torch
import torch.multiprocessing as torch_mp
from tensordict import TensorDict, TensorDictBase

from marlplug.algorithms.protocol import LearnerProgram
from marlplug.distributed.backends.base import LearnerFailure, Task
from marlplug.distributed.learner import LearnerAnswer, LearnerResult, learner_compute
from marlplug.errors import UserError

#: Round-robin slots for the state and the batch: a worker may still copy round r while round r+1 is written.
SLOTS = 2


class LearnerStartError(UserError):
    """Learners could not be started."""


class LocalBackend:
    """Learners as worker processes (forked from a fork server) with shared-memory state and batch.

    Args:
        num_learners: how many worker processes N.
        start_timeout_s: how long :meth:`start` waits for every worker to be ready.

    Examples:
        >>> backend = LocalBackend(num_learners=2)  # doctest: +SKIP
        >>> backend.start(program)  # doctest: +SKIP
        >>> backend.close()  # doctest: +SKIP
    """

    def __init__(self, num_learners: int, *, start_timeout_s: float = 120.0) -> None:
        self.num_learners = num_learners
        self.start_timeout_s = start_timeout_s
        # A fork server imports torch and marlplug once; each learner (and each restart) is then a
        # cheap fork of it instead of a fresh interpreter (seconds per learner on a busy machine).
        self._context = torch_mp.get_context("forkserver")
        self._context.set_forkserver_preload([__name__])
        self._processes: dict[int, Any] = {}
        self._task_conns: dict[int, Any] = {}
        self._result_conns: dict[int, Any] = {}
        self._program: LearnerProgram | None = None
        self._state: torch.Tensor | None = None
        self._batch: dict[Any, torch.Tensor] = {}
        self._batch_size: list[int] = []
        self._stamps = torch.full((SLOTS,), -1, dtype=torch.int64).share_memory_()
        self._closed = False
        #: ``(learner, generation, message or None at end of pipe)`` from the reader threads; a
        #: restarted learner's new pipe has a new generation, so its old reader's end is ignored.
        self._inbox: queue.Queue[tuple[int, int, Any]] = queue.Queue()
        self._generation: dict[int, int] = {}

    # ------------------------------------------------------------------ lifecycle

    def start(self, program: LearnerProgram) -> None:
        self._program = program

    def prepare(self, state: torch.Tensor, batch: TensorDictBase) -> None:
        """Allocate the shared slots for these shapes and start the workers (once)."""
        if self._state is not None:
            return
        self._state = torch.zeros(SLOTS, *state.shape, dtype=state.dtype).share_memory_()
        self._batch_size = list(batch.batch_size)
        for key, value in batch.items(include_nested=True, leaves_only=True):
            self._batch[key] = torch.zeros(SLOTS, *value.shape, dtype=value.dtype).share_memory_()
        for learner in range(self.num_learners):
            self._spawn(learner)
        deadline = time.monotonic() + self.start_timeout_s
        waiting = set(range(self.num_learners))
        while waiting:
            remaining = deadline - time.monotonic()
            try:
                learner, generation, message = self._inbox.get(timeout=max(0.0, remaining))
            except queue.Empty:
                self.close()
                raise LearnerStartError(
                    f"local backend: learners {sorted(waiting)} were not ready within "
                    f"{self.start_timeout_s:.0f} s"
                ) from None
            if generation != self._generation.get(learner):
                continue
            if message is None:
                self.close()
                raise LearnerStartError(f"local backend: learner {learner} exited while starting")
            if message[0] == "ready":
                waiting.discard(learner)

    def _spawn(self, learner: int) -> None:
        assert self._program is not None and self._state is not None
        task_recv, task_send = self._context.Pipe(duplex=False)
        result_recv, result_send = self._context.Pipe(duplex=False)
        process = self._context.Process(
            target=_worker_main,
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
        process.start()
        task_recv.close()
        result_send.close()
        self._processes[learner] = process
        self._task_conns[learner] = task_send
        self._result_conns[learner] = result_recv
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

    def poll(self, timeout_s: float) -> list[LearnerResult | LearnerFailure]:
        events: list[LearnerResult | LearnerFailure] = []
        try:
            received = [self._inbox.get(timeout=max(0.0, timeout_s))]
        except queue.Empty:
            return events
        with contextlib.suppress(queue.Empty):
            while True:
                received.append(self._inbox.get_nowait())
        for learner, generation, message in received:
            if generation != self._generation.get(learner) or learner not in self._result_conns:
                continue  # the end of a pipe already replaced or closed
            if message is None:
                process = self._processes[learner]
                process.join(timeout=1)
                events.append(
                    LearnerFailure(
                        learner, None, f"process exited (code {process.exitcode})", died=True
                    )
                )
                self._result_conns.pop(learner).close()
                continue
            kind = message[0]
            if kind == "result":
                _, _, round_index, task_id, answer = message
                events.append(LearnerResult(learner, round_index, task_id, _from_pipe(answer)))
            elif kind == "error":
                events.append(LearnerFailure(learner, message[2], str(message[4]), died=False))
        return events


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


# ---------------------------------------------------------------------- the worker process


def _worker_main(
    learner: int,
    program: LearnerProgram,
    state_slots: torch.Tensor,
    batch_slots: dict[Any, torch.Tensor],
    batch_size: list[int],
    stamps: torch.Tensor,
    task_conn: Any,
    result_conn: Any,
    parent_pid: int,
) -> None:
    torch.set_num_threads(1)
    result_conn.send(("ready", learner))
    inbox: deque[tuple[Any, ...]] = deque()

    def receive(timeout_s: float) -> bool:
        """Move every waiting message to the inbox; False once told to stop or orphaned."""
        if not task_conn.poll(timeout_s):
            # The controller's death also closes the task pipe (EOFError below); this is a backstop.
            return _process_exists(parent_pid)
        while task_conn.poll():
            message = task_conn.recv()
            if message[0] == "stop":
                return False
            inbox.append(message)
        # Only the newest round matters: older tasks would be discarded by the controller anyway.
        newest = max(m[1] for m in inbox)
        for message in [m for m in inbox if m[1] < newest]:
            inbox.remove(message)
        return True

    try:
        while True:
            if not inbox and not receive(1.0):
                return
            if not inbox:
                continue
            _, round_index, task_id, row, seed, delay_s = inbox.popleft()
            slot = round_index % SLOTS
            if int(stamps[slot]) != round_index:
                continue
            state = state_slots[slot].clone()
            batch = TensorDict({}, batch_size=batch_size)
            for key, value in batch_slots.items():
                batch.set(key, value[slot].clone())
            if int(stamps[slot]) != round_index:
                continue
            try:
                answer = learner_compute(program, row, state, batch, seed=seed)
            except Exception:
                result_conn.send(("error", learner, round_index, task_id, traceback.format_exc()))
                continue
            release = time.monotonic() + delay_s
            superseded = False
            while time.monotonic() < release:
                if not receive(min(0.05, release - time.monotonic())):
                    return
                if any(m[1] > round_index for m in inbox):
                    superseded = True
                    break
            if not superseded:
                result_conn.send(("result", learner, round_index, task_id, _to_pipe(answer)))
    except (EOFError, OSError, KeyboardInterrupt):
        return


def _to_pipe(answer: LearnerAnswer) -> tuple[Any, ...]:
    """The answer with numpy arrays, which pickle by value: torch's multiprocessing would send each
    tensor as a shared-memory handle (a file descriptor per tensor and answer)."""
    stats = {name: value.numpy() for name, value in answer.stats.items()}
    return answer.coded.numpy(), answer.agents, stats, answer.compute_s


def _from_pipe(message: tuple[Any, ...]) -> LearnerAnswer:
    coded, agents, stats, compute_s = message
    tensors = {name: torch.from_numpy(value) for name, value in stats.items()}
    return LearnerAnswer(torch.from_numpy(coded), list(agents), tensors, compute_s)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
