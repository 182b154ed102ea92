"""The coded controller: one round = broadcast the agents' state rows (θ and optimizer state) and a
minibatch, collect coded answers, decode the new rows as soon as the answers received span every
agent, discard late answers.

Two clocks. ``wall``: learners run on a backend (worker processes or Ray) and the round ends in real
time. ``simulated``: the learners' updates really run here, one after another on one thread, their
compute time is measured, injected delays are added on a virtual clock, and the round ends when the
decodable set has completed on that clock — N parallel machines reproduced on a small host. Learners
holding the same agents compute the same bits, so each distinct set of agents is updated once and
every learner holding it is charged that update's measured time (plus its own coding, timed).

On the wall clock the first round starts as soon as the learners ready can decode it, and a learner
that dies, in a round or while it starts, is started again (:mod:`marlplug.distributed.learner_starts`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from marlplug.algorithms.protocol import AgentUpdate, LearnerProgram
from marlplug.coding import Decoder, make_decoder
from marlplug.coding.exact import from_ordinals
from marlplug.coding.stragglers import StragglerModel, first_decodable
from marlplug.distributed.backends.base import Backend
from marlplug.distributed.learner import (
    AgentsUpdate,
    LearnerAnswer,
    code_answer,
    row_agents,
    split_rows,
    state_rows,
    update_agents,
)
from marlplug.distributed.learner_starts import LearnerStartError, LearnerStarts, StartPolicy
from marlplug.distributed.rounds import ROUND_ROW_COLUMNS, RoundLog, merge_stats
from marlplug.distributed.wall_round import (
    LearnerError,
    RoundTimeoutError,
    WallRound,
    check_round_timeout,
)
from marlplug.errors import UserError
from marlplug.torch_threads import one_thread

__all__ = [
    "ROUND_ROW_COLUMNS",
    "CodedController",
    "LearnerError",
    "LearnerStartError",
    "RoundLog",
    "RoundTimeoutError",
    "StartPolicy",
]


class CodedController:
    """Runs coded update rounds for one learner program, assignment matrix and straggler model.

    A round returns what ``program.update(theta_all, opt_state, batch, all agents, seed)`` returns
    for every agent — an :class:`~marlplug.algorithms.protocol.AgentUpdate` with the decoded state
    and the per-agent statistics the learners sent — so a coded round stands in for a centralized
    update call.

    Args:
        program: the bound learner algorithm (:class:`~marlplug.algorithms.protocol.LearnerProgram`).
        assignment_matrix: ``C``, ``(N, M)``.
        backend: where learners run (``None`` is allowed only with ``clock="simulated"``).
        scheme: the coding scheme (for its decoder); ``None`` uses :func:`marlplug.coding.make_decoder`.
        stragglers: the straggler model (default: none).
        clock: ``"wall"`` or ``"simulated"``.
        round_timeout_s: wait this long for a decodable set before re-dispatching missing agents,
            and as long again before the round fails (finite: no wait is unbounded).
        start_policy: how learners that die while they start are started again.

    Examples:
        >>> import numpy as np, torch
        >>> from tensordict import TensorDict
        >>> from marlplug.algorithms.protocol import AgentUpdate
        >>> from marlplug.coding import MDSCode
        >>> class Step:  # a toy program: θ' = θ - 0.5, and a step counter as optimizer state
        ...     num_agents, theta_size, opt_state_size = 2, 3, 1
        ...     def update(self, theta_all, opt_state, batch, agents, seed):
        ...         return AgentUpdate(theta_all[agents] - 0.5, opt_state[agents] + 1,
        ...                            {"step": opt_state[agents, 0] + 1})
        >>> scheme = MDSCode()
        >>> controller = CodedController(Step(), scheme.assignment_matrix(2, 4), None,
        ...     scheme=scheme, stragglers=StragglerModel(count=2, delay_s=1.0), clock="simulated")
        >>> update, log = controller.update(torch.ones(2, 3), torch.zeros(2, 1),
        ...     TensorDict({}, batch_size=[]), round_index=0, seed=0)
        >>> update.theta.tolist(), update.stats["step"].tolist()
        ([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], [1.0, 1.0])
        >>> log.wait_s < 1.0, len(log.stragglers)
        (True, 2)
    """

    def __init__(
        self,
        program: LearnerProgram,
        assignment_matrix: np.ndarray,
        backend: Backend | None,
        *,
        scheme: Any | None = None,
        stragglers: StragglerModel | None = None,
        clock: str = "wall",
        round_timeout_s: float = 60.0,
        start_policy: StartPolicy | None = None,
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
        self.round_timeout_s = check_round_timeout(round_timeout_s)
        self.active_learners = [j for j in range(self.num_learners) if matrix[j].any()]
        self.starts: LearnerStarts | None = None
        self._learners_up = False
        if backend is not None:
            self.starts = LearnerStarts(
                backend,
                make_decoder(matrix, scheme=scheme).can_decode,
                self.active_learners,
                start_policy or StartPolicy(),
            )
            backend.start(program)

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
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        round_index: int,
        *,
        seed: int,
    ) -> tuple[AgentUpdate, RoundLog]:
        """Every agent's update for this round, decoded, and the round's record.

        ``seed`` is the round's seed, passed to every learner's ``program.update`` as the
        centralized trainer passes it to its one call (e.g. ``derive_seed(run seed, round)``).
        """
        delays = self.stragglers.delays(self.active_learners)
        state = state_rows(theta_all, opt_state)
        if self.clock == "simulated":
            decoder, answers, log = self._simulated_round(state, batch, round_index, seed, delays)
        else:
            decoder, answers, log = self._wall_round(state, batch, round_index, seed, delays)
        start = time.perf_counter()
        decoded = from_ordinals(decoder.decode()[: self.num_agents], state.dtype)
        theta_new, opt_new = split_rows(decoded.reshape(state.shape), self.program.theta_size)
        log.decode_s = time.perf_counter() - start
        log.round_s = log.wait_s + log.decode_s
        stats = merge_stats(answers, self.num_agents)
        return AgentUpdate(theta_new, opt_new, stats), log

    def _simulated_round(
        self,
        state: torch.Tensor,
        batch: TensorDictBase,
        round_index: int,
        seed: int,
        delays: dict[int, float],
    ) -> tuple[Decoder, list[LearnerAnswer], RoundLog]:
        """The learners' updates run here in turn; the round ends on a virtual clock.

        An MDS learner holds every agent, so at N = 15 the same update would run 15 times: each
        distinct set of agents runs once (the bits do not depend on which learner asks).
        """
        answers: dict[int, LearnerAnswer] = {}
        updates: dict[tuple[int, ...], AgentsUpdate] = {}

        def compute(learner: int) -> None:
            row = self.matrix[learner]
            agents = tuple(row_agents(row))
            if agents not in updates:
                updates[agents] = update_agents(self.program, list(agents), state, batch, seed=seed)
            answers[learner] = code_answer(row, updates[agents])

        decoder = make_decoder(self.matrix, scheme=self.scheme)
        # One core per simulated machine; also keeps timings independent.
        with one_thread():
            # Learners without a delay first: if they decode before any delayed one could finish,
            # the delayed ones cannot matter on the virtual clock and need not run.
            prompt = [j for j in self.active_learners if delays[j] <= 0]
            late = [j for j in self.active_learners if delays[j] > 0]
            for learner in prompt:
                compute(learner)
            _, finish = first_decodable(
                {j: answers[j].compute_s for j in prompt}, decoder.can_decode
            )
            if late and finish > min(delays[j] for j in late):
                for learner in late:
                    compute(learner)
        finish_s = {j: answers[j].compute_s + delays[j] for j in answers}
        used, last = first_decodable(finish_s, decoder.can_decode)
        if not np.isfinite(last):
            raise RoundTimeoutError(
                f"round {round_index}: every learner answered and the answers do not decode: "
                f"{decoder.why_not(sorted(answers))}"
            )
        for learner in used:
            decoder.add(learner, answers[learner].coded)
        log = RoundLog(
            round_index=round_index,
            clock="simulated",
            stragglers=sorted(j for j, d in delays.items() if d > 0),
            learners_used=used,
            arrivals=finish_s,
            compute_s={j: answer.compute_s for j, answer in answers.items()},
            wait_s=last,
            decode_s=0.0,
            round_s=last,
        )
        return decoder, [answers[j] for j in used], log

    def _wall_round(
        self,
        state: torch.Tensor,
        batch: TensorDictBase,
        round_index: int,
        seed: int,
        delays: dict[int, float],
    ) -> tuple[Decoder, list[LearnerAnswer], RoundLog]:
        """Learners run on the backend; the round ends in real time."""
        backend, starts = self.backend, self.starts
        assert backend is not None and starts is not None
        backend.prepare(state, batch)
        if not self._learners_up:
            # Not on the round's clock: the first round waits for start-up like any other.
            starts.wait_until_decodable()
            self._learners_up = True
        wall_round = WallRound(
            backend,
            self.matrix,
            self.scheme,
            round_index,
            seed,
            self.round_timeout_s,
            self.active_learners,
            delays,
            starts,
        )
        backend.broadcast(round_index, state, batch)
        decoder = wall_round.run()
        wait_s = time.perf_counter() - wall_round.start
        log = wall_round.log(wait_s=wait_s)
        starts.take_log()  # in this round's record (with what happened since the last round)
        return decoder, list(wall_round.answers.values()), log
