"""The coded controller: one round = broadcast θ and a minibatch, collect coded answers, decode θ' as soon
as the answers received span every agent, discard late answers.

Two clocks. ``wall``: learners run on a backend (worker processes or Ray) and the round ends in real
time. ``simulated``: every learner's update really runs here, one after another on one thread, its
compute time is measured, injected delays are added on a virtual clock, and the round ends when the
decodable set has completed on that clock — N parallel machines reproduced faithfully on a small host.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from marlplug.coding import make_decoder
from marlplug.distributed.backends.base import Backend, LearnerFailure, Task
from marlplug.distributed.learner import UpdateProgram, learner_compute
from marlplug.distributed.stragglers import StragglerModel
from marlplug.errors import UserError


class RoundTimeoutError(UserError):
    """A round could not be decoded, even after re-dispatching its missing agents."""


class LearnerError(RuntimeError):
    """A learner's update raised; the message carries the learner's traceback."""


#: The keys of :meth:`RoundLog.as_row`, in order: the header of a rounds log.
ROUND_ROW_COLUMNS = (
    "round",
    "clock",
    "round_s",
    "wait_s",
    "decode_s",
    "compute_s_max",
    "learners_used",
    "stragglers",
    "failures",
    "redispatched_agents",
)


@dataclass
class RoundLog:
    """What happened in one coded round (all times in seconds; virtual ones in simulated mode)."""

    round_index: int
    clock: str
    stragglers: list[int]
    learners_used: list[int]
    arrivals: dict[int, float]
    compute_s: dict[int, float]
    wait_s: float
    decode_s: float
    round_s: float
    failures: list[str] = field(default_factory=list)
    redispatched_agents: list[int] = field(default_factory=list)
    restarted: list[int] = field(default_factory=list)

    def as_row(self) -> dict[str, Any]:
        """A flat record for CSV/JSON logs, keyed by :data:`ROUND_ROW_COLUMNS`."""
        return {
            "round": self.round_index,
            "clock": self.clock,
            "round_s": self.round_s,
            "wait_s": self.wait_s,
            "decode_s": self.decode_s,
            "compute_s_max": max(self.compute_s.values(), default=0.0),
            "learners_used": " ".join(map(str, self.learners_used)),
            "stragglers": " ".join(map(str, self.stragglers)),
            "failures": len(self.failures),
            "redispatched_agents": " ".join(map(str, self.redispatched_agents)),
        }


def make_round_decoder(matrix: np.ndarray, scheme: Any | None) -> Any:
    """A fresh decoder for ``matrix`` from the coding package (the scheme's own if it has one)."""
    return make_decoder(matrix, scheme=scheme)


def virtual_round(finish_s: dict[int, float], add: Any, decodable: Any) -> tuple[list[int], float]:
    """Feed learners to a decoder in order of finish time; return the used ones and the finish time
    of the last one needed (``inf`` if never decodable)."""
    used: list[int] = []
    for learner in sorted(finish_s, key=lambda j: (finish_s[j], j)):
        add(learner)
        used.append(learner)
        if decodable():
            return used, finish_s[learner]
    return used, float("inf")


class CodedController:
    """Runs coded update rounds for one update program, assignment matrix and straggler model.

    Args:
        program: the bound learner algorithm (``update(theta_all, agents, batch, seeds)``).
        assignment_matrix: ``C``, ``(N, M)``.
        backend: where learners run (``None`` is allowed only with ``clock="simulated"``).
        scheme: the coding scheme (for its decoder); ``None`` uses :func:`marlplug.coding.make_decoder`.
        stragglers: the straggler model (default: none).
        clock: ``"wall"`` or ``"simulated"``.
        round_timeout_s: wait this long for a decodable set before re-dispatching missing agents.
        seed: the base of every agent's per-round seed.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> from marlplug.algorithms.spaces import AgentSpace
        >>> from marlplug.coding import MDSCode
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=4, action_dim=3, discrete=True)
        ...           for i in range(2)]
        >>> program = MADDPG(hidden_sizes=[8]).bind(agents)
        >>> theta = program.init_state(seed=0)
        >>> batch = TensorDict(obs=torch.zeros(16, 2, 4), action=torch.zeros(16, 2, 3),
        ...     reward=torch.ones(16, 2), next_obs=torch.zeros(16, 2, 4),
        ...     terminated=torch.zeros(16, 2, dtype=torch.bool), batch_size=[16])
        >>> scheme = MDSCode()
        >>> controller = CodedController(program, scheme.assignment_matrix(2, 4), None,
        ...     scheme=scheme, stragglers=StragglerModel(count=2, delay_s=1.0), clock="simulated")
        >>> new_theta, log = controller.update(theta, batch, round_index=0)
        >>> new_theta.shape == theta.shape, log.wait_s < 1.0, len(log.stragglers)
        (True, True, 2)
    """

    def __init__(
        self,
        program: UpdateProgram,
        assignment_matrix: np.ndarray,
        backend: Backend | None,
        *,
        scheme: Any | None = None,
        stragglers: StragglerModel | None = None,
        clock: str = "wall",
        round_timeout_s: float = 60.0,
        seed: int = 0,
    ) -> None:
        if clock not in {"wall", "simulated"}:
            raise UserError(f"coding.clock: unknown clock '{clock}'; available: simulated, wall")
        if clock == "wall" and backend is None:
            raise UserError("coding.clock: 'wall' needs a backend (local or ray)")
        matrix = np.asarray(assignment_matrix, dtype=np.float64)
        if matrix.shape[1] != program.num_agents:
            raise UserError(
                f"coding: the assignment matrix has {matrix.shape[1]} columns but there are "
                f"{program.num_agents} agents"
            )
        self.program = program
        self.matrix = matrix
        self.num_learners, self.num_agents = matrix.shape
        self.backend = backend
        self.scheme = scheme
        self.stragglers = stragglers or StragglerModel()
        self.clock = clock
        self.round_timeout_s = round_timeout_s
        self.seed = seed
        self.active_learners = [j for j in range(self.num_learners) if matrix[j].any()]
        if backend is not None:
            backend.start(program, seed=seed)

    def close(self) -> None:
        """Stop every learner process this controller's backend started."""
        if self.backend is not None:
            self.backend.close()

    def skip_rounds(self, rounds: int) -> None:
        """Move the straggler draws past ``rounds`` rounds run before (a resumed run), so that the
        rounds to come meet the stragglers an uninterrupted run would have met (each round draws
        its delays once, in :meth:`update`). Call it on a controller that has run no round yet.
        """
        for _ in range(rounds):
            self.stragglers.delays(self.active_learners)

    def __enter__(self) -> CodedController:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ one round

    def update(
        self, theta_all: torch.Tensor, batch: TensorDictBase, round_index: int
    ) -> tuple[torch.Tensor, RoundLog]:
        """Decode ``θ'`` (``[M, D]``, the dtype of ``theta_all``) for this round."""
        delays = self.stragglers.delays(self.active_learners)
        if self.clock == "simulated":
            return self._simulated_round(theta_all, batch, round_index, delays)
        return self._wall_round(theta_all, batch, round_index, delays)

    def _decode(self, decoder: Any, dtype: torch.dtype) -> tuple[torch.Tensor, float]:
        start = time.perf_counter()
        decoded = decoder.decode()
        return torch.as_tensor(decoded).to(dtype), time.perf_counter() - start

    def _compute(
        self, learner: int, theta_all: torch.Tensor, batch: TensorDictBase, round_index: int
    ) -> tuple[torch.Tensor, float]:
        return learner_compute(
            self.program,
            self.matrix[learner],
            theta_all,
            batch,
            round_index=round_index,
            seed=self.seed,
        )

    def _simulated_round(
        self,
        theta_all: torch.Tensor,
        batch: TensorDictBase,
        round_index: int,
        delays: dict[int, float],
    ) -> tuple[torch.Tensor, RoundLog]:
        coded: dict[int, torch.Tensor] = {}
        compute_s: dict[int, float] = {}
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one core per simulated machine; also keeps timings independent
        try:
            # Learners without a delay first: if they decode before any delayed one could finish,
            # the delayed ones cannot matter on the virtual clock and need not run.
            prompt = [j for j in self.active_learners if delays[j] <= 0]
            late = [j for j in self.active_learners if delays[j] > 0]
            for learner in prompt:
                coded[learner], compute_s[learner] = self._compute(
                    learner, theta_all, batch, round_index
                )
            probe = make_round_decoder(self.matrix, self.scheme)
            _, finish = virtual_round(
                {j: compute_s[j] for j in prompt},
                lambda j: probe.add(j, coded[j]),
                lambda: probe.decodable,
            )
            if late and finish > min(delays[j] for j in late):
                for learner in late:
                    coded[learner], compute_s[learner] = self._compute(
                        learner, theta_all, batch, round_index
                    )
        finally:
            torch.set_num_threads(threads)
        finish_s = {j: compute_s[j] + delays[j] for j in coded}
        decoder = make_round_decoder(self.matrix, self.scheme)
        used, last = virtual_round(
            finish_s, lambda j: decoder.add(j, coded[j]), lambda: decoder.decodable
        )
        if not decoder.decodable:
            raise RoundTimeoutError(f"round {round_index}: the assignment matrix cannot be decoded")
        theta_new, decode_s = self._decode(decoder, theta_all.dtype)
        log = RoundLog(
            round_index=round_index,
            clock="simulated",
            stragglers=sorted(j for j, d in delays.items() if d > 0),
            learners_used=used,
            arrivals=finish_s,
            compute_s=compute_s,
            wait_s=last,
            decode_s=decode_s,
            round_s=last + decode_s,
        )
        return theta_new, log

    def _wall_round(
        self,
        theta_all: torch.Tensor,
        batch: TensorDictBase,
        round_index: int,
        delays: dict[int, float],
    ) -> tuple[torch.Tensor, RoundLog]:
        backend = self.backend
        assert backend is not None
        backend.prepare(theta_all, batch)
        start = time.perf_counter()
        backend.broadcast(round_index, theta_all, batch)
        for learner in self.active_learners:
            backend.submit(
                Task(learner, round_index, learner, self.matrix[learner], delays[learner])
            )
        decoder = make_round_decoder(self.matrix, self.scheme)
        received: dict[int, torch.Tensor] = {}
        arrivals: dict[int, float] = {}
        compute_s: dict[int, float] = {}
        failures: list[str] = []
        restarted: list[int] = []
        redispatched: list[int] = []
        answered: set[int] = set()
        deadline = time.monotonic() + self.round_timeout_s
        while not decoder.decodable:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if redispatched:
                    raise RoundTimeoutError(
                        f"round {round_index}: not decodable {self.round_timeout_s:g} s after "
                        f"re-dispatching agents {redispatched}; answered: {sorted(answered)}"
                    )
                decoder, redispatched = self._redispatch(round_index, received, answered, restarted)
                deadline = time.monotonic() + self.round_timeout_s
                continue
            for event in backend.poll(min(remaining, 0.5)):
                if isinstance(event, LearnerFailure):
                    last_line = event.message.strip().splitlines()[-1]
                    if not event.died:
                        # An exception in the update is a bug, not a straggler: every replica would
                        # raise it again, so stop now with the learner's own message.
                        raise LearnerError(
                            f"round {round_index}: learner {event.learner} failed: {last_line}\n"
                            f"{event.message.strip()}"
                        )
                    failures.append(f"learner {event.learner}: {last_line}")
                    backend.restart(event.learner)
                    restarted.append(event.learner)
                    if event.learner not in answered and event.learner in self.active_learners:
                        row = self.matrix[event.learner]
                        backend.submit(Task(event.learner, round_index, event.learner, row))
                    continue
                if event.round_index != round_index or event.task_id in received:
                    continue  # a late answer of an earlier round, or a duplicate
                received[event.task_id] = event.coded
                answered.add(event.learner)
                arrivals[event.task_id] = time.perf_counter() - start
                compute_s[event.task_id] = event.compute_s
                decoder.add(event.task_id, event.coded)
        wait_s = time.perf_counter() - start
        theta_new, decode_s = self._decode(decoder, theta_all.dtype)
        log = RoundLog(
            round_index=round_index,
            clock="wall",
            stragglers=sorted(j for j, d in delays.items() if d > 0),
            learners_used=sorted(received),
            arrivals=arrivals,
            compute_s=compute_s,
            wait_s=wait_s,
            decode_s=decode_s,
            round_s=time.perf_counter() - start,
            failures=failures,
            redispatched_agents=redispatched,
            restarted=restarted,
        )
        return theta_new, log

    def _redispatch(
        self,
        round_index: int,
        received: dict[int, torch.Tensor],
        answered: set[int],
        restarted: Sequence[int],
    ) -> tuple[Any, list[int]]:
        """Send every agent the received rows do not determine to a live learner, one agent per task.

        Returns a decoder over the augmented matrix ``[C; I_M]`` (task ``N + i`` computes agent ``i``
        alone) that already holds the received rows, and the re-dispatched agents.
        """
        backend = self.backend
        assert backend is not None
        augmented = np.vstack([self.matrix, np.eye(self.num_agents)])
        decoder = make_round_decoder(augmented, None)
        for task_id, coded in received.items():
            decoder.add(task_id, coded)
        rows = self.matrix[sorted(received)] if received else np.zeros((0, self.num_agents))
        rank = np.linalg.matrix_rank(rows) if len(rows) else 0
        missing = [
            i
            for i in range(self.num_agents)
            if np.linalg.matrix_rank(np.vstack([rows, np.eye(self.num_agents)[i]])) > rank
        ]
        alive = getattr(backend, "alive", None)
        candidates = [j for j in range(self.num_learners) if alive is None or alive(j)]
        preferred = [j for j in candidates if j in answered] + [
            j for j in candidates if j not in answered
        ]
        if not preferred:
            preferred = list(restarted) or list(range(self.num_learners))
        for position, agent in enumerate(missing):
            learner = preferred[position % len(preferred)]
            task_id = self.num_learners + agent
            backend.submit(Task(learner, round_index, task_id, augmented[task_id]))
        return decoder, missing
