"""The ``ray`` backend: one Ray actor per learner, on an existing cluster or a local Ray marlplug starts.

θ and the minibatch go into the object store once per round (``ray.put``); tasks reference them, and
the controller collects answers with ``ray.wait``. Learner actors are async, so a straggler's injected
delay is an ``asyncio.sleep`` that ``ray.cancel`` ends when its answer is no longer needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import Any

import torch
from tensordict import TensorDictBase

from marlplug.distributed.backends.base import LearnerFailure, Task
from marlplug.distributed.learner import LearnerResult, UpdateProgram, learner_compute
from marlplug.errors import UserError


class RayUnavailableError(UserError):
    """Ray is not installed, or the cluster cannot be reached."""


class LearnerActor:
    """A learner inside a Ray actor (wrapped with ``ray.remote`` when the backend starts)."""

    def __init__(self, learner: int, program: UpdateProgram, seed: int) -> None:
        torch.set_num_threads(1)
        self.learner = learner
        self.program = program
        self.seed = seed

    def ready(self) -> int:
        return self.learner

    async def compute(
        self,
        round_index: int,
        task_id: int,
        row: Any,
        theta_all: torch.Tensor,
        batch: TensorDictBase,
        delay_s: float,
    ) -> tuple[int, int, Any, float]:
        coded, compute_s = learner_compute(
            self.program, row, theta_all, batch, round_index=round_index, seed=self.seed
        )
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        return round_index, task_id, coded.numpy(), compute_s


class RayBackend:
    """Learners as Ray actors.

    Args:
        num_learners: how many actors N.
        address: an existing cluster (``"auto"``, ``"ray://host:10001"``, ...); ``None`` starts a
            local Ray, which :meth:`close` shuts down again.
        num_cpus: CPUs of the local Ray that is started (ignored with ``address``).
        learner_num_cpus: CPUs reserved per learner actor (fractions allowed).
        start_timeout_s: how long :meth:`start` waits for every actor.

    Examples:
        >>> backend = RayBackend(num_learners=3, num_cpus=2)  # doctest: +SKIP
    """

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
        self._pending: dict[Any, tuple[int, int, int]] = {}
        self._refs: tuple[Any, Any] | None = None
        self._program: UpdateProgram | None = None
        self._seed = 0
        self._closed = False

    def start(self, program: UpdateProgram, *, seed: int) -> None:
        ray = self._ray
        self._program = program
        self._seed = seed
        if not ray.is_initialized():
            if self.address is not None:
                check_reachable(self.address)
            try:
                if self.address is None:
                    ray.init(num_cpus=self.num_cpus, include_dashboard=False, log_to_driver=False)
                    self._started_ray = True
                else:
                    ray.init(address=self.address, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.address or "a local Ray"
                raise RayUnavailableError(
                    f"coding.ray_address: cannot start or reach Ray at '{where}': {exc}".splitlines()[
                        0
                    ]
                ) from None
        for learner in range(self.num_learners):
            self._spawn(learner)
        try:
            ray.get(
                [actor.ready.remote() for actor in self._actors.values()],
                timeout=self.start_timeout_s,
            )
        except Exception as exc:
            self.close()
            raise RayUnavailableError(
                f"ray backend: learners not ready within {self.start_timeout_s:.0f} s: {exc}".splitlines()[
                    0
                ]
            ) from None

    def _spawn(self, learner: int) -> None:
        ray = self._ray
        cpus = self.learner_num_cpus
        if cpus is None:
            total = float(ray.cluster_resources().get("CPU", 1.0))
            cpus = min(1.0, total / max(1, self.num_learners))
        actor_class = ray.remote(LearnerActor)
        self._actors[learner] = actor_class.options(
            num_cpus=cpus, max_concurrency=4, name=None
        ).remote(learner, self._program, self._seed)

    def prepare(self, theta_all: torch.Tensor, batch: TensorDictBase) -> None:
        """Nothing to allocate: the object store takes any shape."""

    def broadcast(self, round_index: int, theta_all: torch.Tensor, batch: TensorDictBase) -> None:
        ray = self._ray
        # Answers of earlier rounds are no longer needed: end their injected delays.
        for ref, (_, pending_round, _) in list(self._pending.items()):
            if pending_round < round_index:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
                del self._pending[ref]
        self._refs = (ray.put(theta_all), ray.put(batch))

    def submit(self, task: Task) -> None:
        assert self._refs is not None
        actor = self._actors.get(task.learner)
        if actor is None:
            return
        theta_ref, batch_ref = self._refs
        ref = actor.compute.remote(
            task.round_index, task.task_id, task.row, theta_ref, batch_ref, task.delay_s
        )
        self._pending[ref] = (task.learner, task.round_index, task.task_id)

    def poll(self, timeout_s: float) -> list[LearnerResult | LearnerFailure]:
        ray = self._ray
        if not self._pending:
            time.sleep(max(0.0, min(timeout_s, 0.05)))
            return []
        ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=max(0.0, timeout_s))
        if ready:
            more, _ = ray.wait(list(self._pending), num_returns=len(self._pending), timeout=0)
            ready = list(dict.fromkeys([*ready, *more]))
        events: list[LearnerResult | LearnerFailure] = []
        for ref in ready:
            learner, round_index, task_id = self._pending.pop(ref)
            try:
                _, _, coded, compute_s = ray.get(ref)
            except ray.exceptions.TaskCancelledError:
                continue
            except ray.exceptions.RayActorError as exc:
                events.append(LearnerFailure(learner, round_index, f"actor died: {exc}", died=True))
                continue
            except ray.exceptions.RayTaskError as exc:
                events.append(LearnerFailure(learner, round_index, str(exc), died=False))
                continue
            events.append(
                LearnerResult(learner, round_index, task_id, torch.tensor(coded), compute_s)
            )
        return events

    def alive(self, learner: int) -> bool:
        """Whether the backend holds an actor for ``learner`` (Ray reports deaths through tasks)."""
        return learner in self._actors

    def kill(self, learner: int) -> None:
        """Kill learner ``learner``'s actor (for fault-injection tests)."""
        self._ray.kill(self._actors[learner], no_restart=True)

    def restart(self, learner: int) -> None:
        old = self._actors.pop(learner, None)
        if old is not None:
            with contextlib.suppress(Exception):
                self._ray.kill(old, no_restart=True)
        self._spawn(learner)

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
        if self._started_ray and ray.is_initialized():
            ray.shutdown()

    def __enter__(self) -> RayBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_reachable(address: str, *, timeout_s: float = 5.0) -> None:
    """Fail fast, with the address in the message, when a ``host:port`` cluster does not answer.

    Ray itself retries an unreachable address for a long time; ``"auto"`` and addresses without a
    port are left to Ray.
    """
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise RayUnavailableError(
            f"coding.ray_address: cannot reach the Ray cluster at '{address}' ({exc.strerror or exc}); "
            "check the address, or leave ray_address unset to start a local Ray"
        ) from None
