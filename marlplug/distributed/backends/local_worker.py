"""A ``local`` learner's process: load the program, say ready, then answer the newest round's tasks.

The worker reads the round's state rows and minibatch from the shared slots, checks the round stamp
before and after copying (a slot rewritten meanwhile means the task is stale), and sends its coded
answer back over its result pipe. If its program does not load it sends the traceback and exits 1:
the controller names the learner and the cause instead of restarting it for ever.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import time
import traceback
from collections import deque
from typing import Any

import torch
from tensordict import TensorDict

from marlplug.algorithms.protocol import LearnerProgram
from marlplug.distributed.learner import LearnerAnswer, learner_compute

#: Round-robin slots for the state and the batch: a worker may still copy round r while round r+1 is written.
SLOTS = 2


def worker_main(
    learner: int,
    program_bytes: bytes,
    state_slots: torch.Tensor,
    batch_slots: dict[Any, torch.Tensor],
    batch_size: list[int],
    stamps: torch.Tensor,
    task_conn: Any,
    result_conn: Any,
    parent_pid: int,
) -> None:
    torch.set_num_threads(1)
    try:
        program: LearnerProgram = pickle.loads(program_bytes)
    except BaseException:
        # The learner's own fault (e.g. a module the program needs does not import here): say why.
        with contextlib.suppress(OSError):
            result_conn.send(("start-failed", learner, traceback.format_exc()))
        sys.exit(1)
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
                result_conn.send(("result", learner, round_index, task_id, to_pipe(answer)))
    except (EOFError, OSError, KeyboardInterrupt):
        return


def to_pipe(answer: LearnerAnswer) -> tuple[Any, ...]:
    """The answer with numpy arrays, which pickle by value: torch's multiprocessing would send each
    tensor as a shared-memory handle (a file descriptor per tensor and answer)."""
    stats = {name: value.numpy() for name, value in answer.stats.items()}
    return answer.coded.numpy(), answer.agents, stats, answer.compute_s


def from_pipe(message: tuple[Any, ...]) -> LearnerAnswer:
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
