"""The coded controller: one round = broadcast θ and a minibatch, collect coded answers, decode θ' as soon
as the answers received span every agent, discard late answers.

Two clocks. ``wall``: learners run on a backend (worker processes or Ray) and the round ends in real
time. ``simulated``: every learner's update really runs here, one after another on one thread, its
compute time is measured, injected delays are added on a virtual clock, and the round ends when the
decodable set has completed on that clock — N parallel machines reproduced faithfully on a small host.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from marlplug.coding import make_decoder
from marlplug.coding.exact import from_ordinals
from marlplug.distributed.backends.base import Backend
from marlplug.distributed.learner import UpdateProgram, learner_compute
from marlplug.distributed.rounds import ROUND_ROW_COLUMNS, RoundLog
from marlplug.distributed.stragglers import StragglerModel
from marlplug.distributed.wall_round import (
    LearnerError,
    RoundTimeoutError,
    WallRound,
    check_round_timeout,
)
from marlplug.errors import UserError

__all__ = [
    "ROUND_ROW_COLUMNS",
    "CodedController",
    "LearnerError",
    "RoundLog",
    "RoundTimeoutError",
    "make_round_decoder",
    "virtual_round",
]


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
        round_timeout_s: wait this long for a decodable set before re-dispatching missing agents,
            and as long again before the round fails (finite: no wait is unbounded).
        seed: the base of every agent's per-round seed.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> from marlplug.algorithms.row_bridge import MaddpgRows
        >>> from marlplug.algorithms.spaces import AgentSpace
        >>> from marlplug.coding import MDSCode
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=4, action_dim=3, discrete=True)
        ...           for i in range(2)]
        >>> program = MaddpgRows(MADDPG(hidden_sizes=[8]).program(agents))
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
        self.round_timeout_s = check_round_timeout(round_timeout_s)
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

    def _decode(self, decoder: Any, theta_all: torch.Tensor) -> tuple[torch.Tensor, float]:
        """Every agent's state from the decoder (exact ordinals, :mod:`marlplug.coding.exact`), and
        the seconds it took."""
        start = time.perf_counter()
        decoded = decoder.decode()[: self.num_agents]
        theta_new = from_ordinals(decoded, theta_all.dtype).reshape(theta_all.shape)
        return theta_new, time.perf_counter() - start

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
            raise RoundTimeoutError(
                f"round {round_index}: every learner answered and the answers do not decode: "
                f"{decoder.why_not()}"
            )
        theta_new, decode_s = self._decode(decoder, theta_all)
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
        wall_round = WallRound(
            backend,
            self.matrix,
            self.scheme,
            round_index,
            self.round_timeout_s,
            self.active_learners,
            delays,
        )
        backend.broadcast(round_index, theta_all, batch)
        decoder = wall_round.run()
        wait_s = time.perf_counter() - wall_round.start
        theta_new, decode_s = self._decode(decoder, theta_all)
        return theta_new, wall_round.log(decode_s, wait_s=wait_s)
