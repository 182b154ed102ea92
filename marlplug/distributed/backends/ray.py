"""The ``ray`` backend: one Ray actor per learner, on an existing cluster or a local Ray marlplug starts.

The state rows and the minibatch go into the object store once per round (``ray.put``); tasks reference them, and
the controller collects answers with ``ray.wait``. Learner actors are async, so a straggler's injected
delay is an ``asyncio.sleep`` that ``ray.cancel`` ends when its answer is no longer needed. Each actor
is asked ``ready()`` when it is created; that answer (or the actor's death, which Ray reports on every
call pending on it, and which is passed on once) is how the controller learns it is up.

A local Ray that marlplug starts listens on loopback only (GCS, raylet, workers, the driver), and
Ray's own messages (a worker that died, its logs) go to stderr, never into a run's summary on stdout
(:mod:`marlplug.distributed.backends.ray_connection`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import time
from typing import Any

import torch
from tensordict import TensorDictBase

from marlplug.algorithms.protocol import LearnerProgram
from marlplug.distributed.backends.base import BackendEvent, LearnerFailure, LearnerReady, Task
from marlplug.distributed.backends.ray_connection import (
    RayOutputToStderr,
    RayUnavailableError,
    check_reachable,
    loopback_only,
    unavailable_message,
)
from marlplug.distributed.learner import LearnerAnswer, LearnerResult, learner_compute


class LearnerActor:
    """A learner inside a Ray actor (wrapped with ``ray.remote`` when the backend starts)."""

    def __init__(self, learner: int, program: LearnerProgram) -> None:
        torch.set_num_threads(1)
        self.learner = learner
        self.program = program

    def ready(self) -> int:
        return self.learner

    def node(self) -> str:
        """The id of the Ray node this learner runs on."""
        import ray

        return str(ray.get_runtime_context().get_node_id())

    async def compute(
        self,
        round_index: int,
        task_id: int,
        row: Any,
        seed: int,
        state: torch.Tensor,
        batch: TensorDictBase,
        delay_s: float,
    ) -> tuple[int, int, LearnerAnswer]:
        answer = learner_compute(self.program, row, state, batch, seed=seed)
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        return round_index, task_id, answer


class RayBackend:
    """Learners as Ray actors.

    Args:
        num_learners: how many actors N.
        address: an existing cluster (``"auto"``, ``"ray://host:10001"``, ...); ``None`` starts a
            local Ray, which :meth:`close` shuts down again.
        num_cpus: CPUs of the local Ray that is started (ignored with ``address``).
        learner_num_cpus: CPUs reserved per learner actor (fractions allowed).
        start_timeout_s: how long the controller waits for enough actors to be ready before the
            first round.

    Examples:
        >>> backend = RayBackend(num_learners=3, num_cpus=2)  # doctest: +SKIP
    """

    name = "ray"

    def __init__(
        self,
        num_learners: int,
        *,
        address: str | None = None,
        num_cpus: int | None = None,
        learner_num_cpus: float | None = None,
        start_timeout_s: float = 120.0,
    ) -> None:
        try:
            import ray
        except ImportError:
            raise RayUnavailableError(
                "coding.backend: 'ray' needs Ray; install it with `pip install marlplug[ray]`"
            ) from None
        self._ray = ray
        self.num_learners = num_learners
        self.address = address
        self.num_cpus = num_cpus
        self.learner_num_cpus = learner_num_cpus
        self.start_timeout_s = start_timeout_s
        self._started_ray = False
        self._actors: dict[int, Any] = {}
        #: Each learner's actor generation: a restart makes a new one; older ones' news is stale.
        self._generation: dict[int, int] = {}
        self._ready: set[int] = set()
        #: Task refs -> (learner, generation, round, task id); ``ready()`` refs -> (learner, generation).
        self._pending: dict[Any, tuple[int, int, int, int]] = {}
        self._probes: dict[Any, tuple[int, int]] = {}
        self._refs: tuple[Any, Any] | None = None
        self._program: LearnerProgram | None = None
        self._closed = False
        self._stdout: RayOutputToStderr | None = None

    def start(self, program: LearnerProgram) -> None:
        ray = self._ray
        self._program = program
        if not ray.is_initialized() and self.address is not None:
            check_reachable(self.address)
        self._stdout = RayOutputToStderr.install()
        if not ray.is_initialized():
            try:
                if self.address is None:
                    with loopback_only():
                        ray.init(
                            # "local": a new Ray of its own, even where `ray start` left a
                            # cluster on this machine (plain ray.init() would join that one).
                            address="local",
                            num_cpus=self.num_cpus,
                            include_dashboard=False,
                            log_to_driver=False,
                            logging_level=logging.WARNING,
                        )
                    self._started_ray = True
                else:
                    ray.init(
                        address=self.address, log_to_driver=False, logging_level=logging.WARNING
                    )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                self.close()
                raise RayUnavailableError(unavailable_message(self.address, exc)) from None
        cpus = self._reserved_cpus()
        for learner in range(self.num_learners):
            self._spawn(learner, cpus)

    def _reserved_cpus(self) -> float:
        """CPUs each learner reserves: ``learner_num_cpus``, else :func:`cpu_share` of the nodes'."""
        if self.learner_num_cpus is not None:
            return self.learner_num_cpus
        nodes = [node for node in self._ray.nodes() if node.get("Alive")]
        cpus = [float(node.get("Resources", {}).get("CPU", 0.0)) for node in nodes]
        return cpu_share(cpus, self.num_learners)

    def _spawn(self, learner: int, cpus: float) -> None:
        ray = self._ray
        actor_class = ray.remote(LearnerActor)
        # SPREAD: one learner per node while there are nodes without one, so that a lost node
        # takes few learners with it; a learner re-created after a node loss goes to the nodes left.
        actor = actor_class.options(
            num_cpus=cpus, max_concurrency=4, name=None, scheduling_strategy="SPREAD"
        ).remote(learner, self._program)
        generation = self._generation.get(learner, -1) + 1
        self._actors[learner], self._generation[learner] = actor, generation
        self._ready.discard(learner)
        self._probes[actor.ready.remote()] = (learner, generation)

    def prepare(self, state: torch.Tensor, batch: TensorDictBase) -> None:
        """Nothing to allocate: the object store takes any shape."""

    def broadcast(self, round_index: int, state: torch.Tensor, batch: TensorDictBase) -> None:
        ray = self._ray
        # Answers of earlier rounds are no longer needed: end their injected delays.
        for ref, (_, _, pending_round, _) in list(self._pending.items()):
            if pending_round < round_index:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
                del self._pending[ref]
        self._refs = (ray.put(state), ray.put(batch))

    def submit(self, task: Task) -> None:
        assert self._refs is not None
        actor = self._actors.get(task.learner)
        if actor is None:
            return
        state_ref, batch_ref = self._refs
        ref = actor.compute.remote(
            task.round_index, task.task_id, task.row, task.seed, state_ref, batch_ref, task.delay_s
        )
        generation = self._generation[task.learner]
        self._pending[ref] = (task.learner, generation, task.round_index, task.task_id)

    def poll(self, timeout_s: float) -> list[BackendEvent]:
        ray = self._ray
        waiting = [*self._pending, *self._probes]
        if not waiting:
            time.sleep(max(0.0, min(timeout_s, 0.05)))
            return []
        ready, _ = ray.wait(waiting, num_returns=1, timeout=max(0.0, timeout_s))
        if ready:
            more, _ = ray.wait(waiting, num_returns=len(waiting), timeout=0)
            ready = list(dict.fromkeys([*ready, *more]))
        events: list[BackendEvent] = []
        for ref in ready:
            if ref in self._probes:
                learner, generation = self._probes.pop(ref)
                try:
                    ray.get(ref)
                except ray.exceptions.RayError as exc:
                    events += self._death(learner, generation, exc)
                    continue
                if generation == self._generation[learner] and learner in self._actors:
                    self._ready.add(learner)
                    events.append(LearnerReady(learner))
                continue
            learner, generation, round_index, task_id = self._pending.pop(ref)
            try:
                _, _, answer = ray.get(ref)
            except ray.exceptions.TaskCancelledError:
                continue
            except ray.exceptions.RayActorError as exc:
                events += self._death(learner, generation, exc)
                continue
            except ray.exceptions.RayTaskError as exc:
                events.append(LearnerFailure(learner, round_index, str(exc), died=False))
                continue
            # A copy: the decoder keeps the coded vector past the object store's reference to it.
            answer = dataclasses.replace(answer, coded=answer.coded.clone())
            events.append(LearnerResult(learner, round_index, task_id, answer))
        return events

    def _death(self, learner: int, generation: int, error: Exception) -> list[LearnerFailure]:
        """The death of ``learner``'s actor, once per actor: Ray reports it on every call that was
        pending on it, and an actor already replaced is old news."""
        if generation != self._generation[learner] or learner not in self._actors:
            return []
        del self._actors[learner]  # no task goes to it any more, and it is not alive()
        starting = learner not in self._ready
        self._ready.discard(learner)
        # An exception in the actor's constructor (or in loading its program) is its own fault:
        # its traceback is the message (the last line says why).
        own = bool(getattr(error, "actor_init_failed", False))
        message = f"actor died: {error}" if own else f"actor died: {death_cause(error)}"
        return [LearnerFailure(learner, None, message, True, starting, own)]

    def alive(self, learner: int) -> bool:
        """Whether ``learner`` has an actor not reported dead (Ray reports deaths through calls)."""
        return learner in self._actors

    def placement(self, *, timeout_s: float = 60.0) -> dict[int, str]:
        """Which Ray node (its id) each learner runs on; waits for learners still starting.

        Examples:
            >>> backend.placement()  # doctest: +SKIP
            {0: '2f1c...', 1: '9ab0...', 2: '2f1c...'}
        """
        learners = sorted(self._actors)
        nodes = self._ray.get(
            [self._actors[learner].node.remote() for learner in learners], timeout=timeout_s
        )
        return dict(zip(learners, nodes, strict=True))

    def kill(self, learner: int) -> bool:
        """Kill learner ``learner``'s actor (for fault-injection tests; any thread may call it);
        False when it has none (it died and waits for its restart)."""
        actor = self._actors.get(learner)
        if actor is None:
            return False
        self._ray.kill(actor, no_restart=True)
        return True

    def restart(self, learner: int) -> None:
        old = self._actors.pop(learner, None)
        if old is not None:
            with contextlib.suppress(Exception):
                self._ray.kill(old, no_restart=True)
        # It reserves no CPU. After a node loss the nodes left may lack the CPUs a learner reserved
        # at the start, and a learner waiting for them would be lost for good (reserving what
        # looks free races with the other learners re-created in the same round). Without a
        # reservation it shares a core on the nodes left, and is at worst a straggler.
        self._spawn(learner, 0.0)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        ray = self._ray
        for actor in self._actors.values():
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        self._actors.clear()
        self._pending.clear()
        self._probes.clear()
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
        if self._stdout is not None:
            self._stdout.uninstall()
            self._stdout = None

    def __enter__(self) -> RayBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def death_cause(error: Exception) -> str:
    r"""One line for an actor's death from outside: the cause lines of Ray's error, without its
    generic first line and its indented details (class, actor id, pid, ...).

    Examples:
        >>> death_cause(RuntimeError(
        ...     "The actor died unexpectedly before finishing this task.\n\tpid: 9060\n"
        ...     "The actor died because its node has died. Node Id: 04c3\n\tthe node was lost\n"
        ...     "The actor never ran - it was cancelled before it started running."))
        'The actor died because its node has died. Node Id: 04c3 The actor never ran - it was cancelled before it started running.'
    """
    lines = str(error).splitlines()
    causes = [line.strip() for line in lines[1:] if line.strip() and not line[0].isspace()]
    return " ".join(causes) or (lines[0].strip() if lines else type(error).__name__)


def cpu_share(node_cpus: list[float], learners: int) -> float:
    """The CPUs each learner reserves: one while the nodes hold a learner per CPU, else the largest
    share with which every learner fits on some node (learners then share cores).

    A share of the cluster's total is not enough: 5 learners of 0.6 CPU fit 3 on three 1-CPU
    nodes, and the other two would wait for a CPU for ever.

    Examples:
        >>> cpu_share([2.0, 2.0, 2.0], 5), cpu_share([1.0, 1.0, 1.0], 5), cpu_share([2.0], 3)
        (1.0, 0.5, 0.6666666666666666)
        >>> cpu_share([], 3)  # no CPU anywhere: reserve none
        0.0
    """
    # A share c/k puts exactly k learners on a node of c CPUs: the largest one that places all.
    shares = {min(1.0, c / k) for c in node_cpus if c > 0 for k in range(1, learners + 1)}
    for share in sorted(shares, reverse=True):
        if sum(math.floor(c / share + 1e-9) for c in node_cpus) >= learners:
            return share
    return 0.0
