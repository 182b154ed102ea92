"""Measuring coded rounds for ``marlplug bench coding`` (:mod:`marlplug.bench.coding`): one
setting's rounds on a simulated clock (:func:`measure_setting`) or on real processes
(:func:`measure_wall`), one row per code and straggler count k.

Per round the controller takes ``steps_per_iteration`` env steps and samples a minibatch (timed for
real): a round is one iteration of MADDPG with ``updates_per_iteration`` = 1 (the bench builds
MADDPG from its defaults, not from a packaged config, and
:func:`~marlplug.bench.coded_setting.warmed_up` refuses another count), so its env steps belong to
that round alone. On the simulated clock each agent's update runs once per round, in one call for all M agents
through :func:`~marlplug.distributed.learner.learner_compute` (a learner holding every agent, coding
included, timed), and a learner holding one agent is timed the same way. An agent's update does not
depend on which other agents share the call (the ``LearnerProgram`` contract), so those rows are
every learner's rows: each learner a round uses codes its row of them for real, and the decode is
real. A learner holding n agents computes for ``t_1 + (n - 1)·(t_M - t_1)/(M - 1)`` seconds on the
virtual clock (the two timed learners, interpolated: a per-call cost plus a per-agent cost); the
injected delays are added and the round ends when the learners that finished first on that clock can
be decoded. A round so costs M + 1 agent updates whatever the codes (running every learner's update
would cost the sum of the row weights over all codes: about 3,000 agent updates at M = 32, N = 48).
The env steps and the two timed learners are measured once per round and shared by all codes and
straggler counts k, so the codes and k values are compared on the same work. On the wall clock every
learner's update really runs in its own process (for correctness checks and small N).

Columns of a row (medians over the rounds; seconds):

- ``round_s``: env steps + waiting for a decodable set of answers + decoding; ``update_s`` without
  the env steps; ``collect_s`` the env steps alone;
- ``decode_s``: the controller decoding the round's state rows from the answers it used (the
  decode and the rounding of the ordinals back to float32; on the simulated clock on one thread,
  like each learner);
- ``compute_s``: the slowest learner's compute; ``agents_per_learner``: the most agents a learner holds;
- ``compute_per_agent_s``: learner compute divided by the agents assigned, pooled over the code's
  learners (the sum of their compute seconds over the sum of their agent counts; on the wall clock
  over the learners that answered): the cost of one agent's update inside a learner of this code;
- ``round_over_uncoded_k0``: ``round_s`` over the straggler-free uncoded round of the same setting
  (measured even when ``uncoded`` is not among the codes): above 1, the code costs more than it saves.

The warm-up (:func:`~marlplug.bench.coded_setting.warmed_up`) takes one iteration's env steps and
one update: a minibatch is drawn with replacement from the replay buffer, so its size, not the
number of distinct transitions in it, sets the update's cost.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from marlplug.algorithms.protocol import AgentUpdate, LearnerProgram
from marlplug.bench.coded_setting import Setting, warmed_up
from marlplug.coding import make_decoder
from marlplug.coding.exact import from_ordinals, to_ordinals
from marlplug.coding.stragglers import StragglerModel, first_decodable
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController
from marlplug.distributed.learner import learner_compute, state_rows
from marlplug.errors import UserError
from marlplug.plugins import get_plugin_manager
from marlplug.seeding import derive_seed


class RecordingProgram:
    """A learner program that keeps its last update: the all-agents learner's rows, for every code."""

    def __init__(self, program: LearnerProgram) -> None:
        self.program = program
        self.num_agents = program.num_agents
        self.theta_size = program.theta_size
        self.opt_state_size = program.opt_state_size
        self.last: AgentUpdate | None = None

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.program.init_state(seed)

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: Any,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        self.last = self.program.update(theta_all, opt_state, batch, agents, seed)
        return self.last


@dataclass
class RoundWork:
    """One round's learner work, measured once and shared by every code and k.

    Attributes:
        update: every agent's update (the round's new state; what any learner computes for it).
        ordinals: ``[M, P + O]`` float64: the updated state rows as learners code them.
        one_agent_s: a learner holding one agent (its update and coding, timed).
        all_agents_s: a learner holding all M agents (the same, timed).
    """

    update: AgentUpdate
    ordinals: torch.Tensor
    one_agent_s: float
    all_agents_s: float

    def compute_s(self, agents: int) -> float:
        """Seconds a learner holding ``agents`` agents computes: the two timed learners, interpolated.

        Examples:
            >>> work = RoundWork(AgentUpdate(torch.zeros(4, 1), torch.zeros(4, 0), {}),
            ...                  torch.zeros(4, 1), one_agent_s=1.0, all_agents_s=2.5)
            >>> [work.compute_s(n) for n in (1, 2, 4)]
            [1.0, 1.5, 2.5]
        """
        num_agents = self.ordinals.shape[0]
        if num_agents == 1:
            return self.all_agents_s
        slope = (self.all_agents_s - self.one_agent_s) / (num_agents - 1)
        return self.one_agent_s + (agents - 1) * slope

    def coded(self, row: np.ndarray) -> torch.Tensor:
        """What the learner with assignment ``row`` answers (as :func:`learner_compute` codes it)."""
        agents = np.flatnonzero(row)
        weights = torch.as_tensor(row[agents], dtype=torch.float64)
        if len(agents) == self.ordinals.shape[0]:
            return weights @ self.ordinals  # no copy of every agent's rows
        return weights @ self.ordinals[torch.as_tensor(agents)]


def round_work(
    program: LearnerProgram, state: torch.Tensor, batch: Any, *, seed: int, one_agent: int
) -> RoundWork:
    """Time a learner holding every agent and one holding agent ``one_agent``, for one round
    (:func:`learner_compute` both, on the calling thread's torch threads)."""
    num_agents = program.num_agents
    recorded = RecordingProgram(program)
    everyone = learner_compute(recorded, np.ones(num_agents), state, batch, seed=seed)
    update = recorded.last
    assert update is not None
    one_agent_s = everyone.compute_s
    if num_agents > 1:
        row = np.eye(1, num_agents, one_agent).ravel()
        one_agent_s = learner_compute(program, row, state, batch, seed=seed).compute_s
    ordinals = to_ordinals(update.theta.detach(), update.opt_state.detach())
    return RoundWork(update, ordinals, one_agent_s, everyone.compute_s)


def _row(
    setting: Setting,
    name: str,
    k: int,
    learners: int,
    clock: str,
    values: dict[str, list[float]],
    **fixed: Any,
) -> dict[str, Any]:
    """One output row: the medians of ``values`` (``{column: [samples]}``), ``fixed`` and the setting."""
    return {
        "scenario": setting.scenario,
        "agents": setting.agents,
        "stragglers": k,
        "code": name,
        **{column: statistics.median(samples) for column, samples in values.items()},
        **fixed,
        "delay_s": setting.delay_s,
        "learners": learners,
        "clock": clock,
    }


def _plan(codes: Sequence[str], stragglers: Sequence[int]) -> list[tuple[str, int]]:
    """The (code, k) pairs to measure: every code at every k, and the straggler-free uncoded round
    that ``round_over_uncoded_k0`` divides by (last, when it is not among them).

    Examples:
        >>> _plan(["mds"], [0, 2])
        [('mds', 0), ('mds', 2), ('uncoded', 0)]
    """
    plan = [(name, k) for name in codes for k in stragglers]
    return plan if BASELINE in plan else [*plan, BASELINE]


#: The round every row's ``round_over_uncoded_k0`` divides by: uncoded, no straggler.
BASELINE = ("uncoded", 0)


def _rows(
    setting: Setting,
    samples: dict[tuple[str, int], dict[str, list[float]]],
    matrices: dict[str, np.ndarray],
    *,
    codes: Sequence[str],
    learners: int,
    clock: str,
) -> list[dict[str, Any]]:
    """The rows of ``codes`` at the setting's k values (not the baseline :func:`_plan` adds)."""
    base_s = statistics.median(samples[BASELINE]["round_s"])
    rows = []
    for name in codes:
        for k in setting.stragglers:
            row = _row(
                setting,
                name,
                k,
                learners,
                clock,
                samples[name, k],
                agents_per_learner=int(np.count_nonzero(matrices[name], axis=1).max()),
            )
            row["round_over_uncoded_k0"] = row["round_s"] / base_s
            rows.append(row)
    return rows


def _per_agent_s(compute_s: dict[int, float], agent_counts: dict[int, int]) -> float:
    """Learners' compute seconds over the agents they hold, pooled.

    Examples:
        >>> _per_agent_s({0: 1.0, 1: 3.0}, {0: 1, 1: 3})
        1.0
    """
    return sum(compute_s.values()) / sum(agent_counts[j] for j in compute_s)


def measure_setting(
    setting: Setting,
    *,
    codes: Sequence[str],
    learners: int,
    rounds: int,
    env_backend: str,
    seed: int,
    algorithm_options: dict[str, Any],
    after_round: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows ``{scenario, agents, stragglers, code, round_s, decode_s, ...}`` for every code and k
    (medians; the columns are in the module's docstring).

    Each round's learner work (:func:`round_work`) serves every code and k; the stragglers of each
    (code, k) are drawn from one :class:`StragglerModel` stream, as a run's controller draws them.
    ``after_round`` is called after each of the ``rounds`` rounds, outside the timings.
    """
    warm = warmed_up(setting, env_backend, seed, algorithm_options)
    program = warm.program
    registry = get_plugin_manager().registry("code")
    plan = _plan(codes, setting.stragglers)
    schemes = {name: registry[name]() for name, _ in plan}
    matrices = {
        name: scheme.assignment_matrix(program.num_agents, learners, seed)
        for name, scheme in schemes.items()
    }
    models = {
        (name, k): StragglerModel(count=k, delay_s=setting.delay_s, seed=seed) for name, k in plan
    }
    sampler = torch.Generator().manual_seed(seed)
    samples: dict[tuple[str, int], dict[str, list[float]]] = {}
    threads = torch.get_num_threads()
    for round_index in range(rounds):
        batch, collect_s = warm.minibatch(sampler)
        round_seed = derive_seed(seed, round_index)
        state = state_rows(warm.theta, warm.opt_state)
        torch.set_num_threads(1)  # one core per simulated machine, as the controller runs them
        try:
            work = round_work(
                program, state, batch, seed=round_seed, one_agent=round_index % program.num_agents
            )
            coded: dict[str, dict[int, torch.Tensor]] = {}
            for name, k in plan:
                matrix = matrices[name]
                counts = {j: int(np.count_nonzero(matrix[j])) for j in range(learners)}
                compute = {j: work.compute_s(n) for j, n in counts.items() if n}
                delays = models[name, k].delays(sorted(compute))
                decoder = make_decoder(matrix, scheme=schemes[name])
                finish = {j: compute[j] + delays[j] for j in compute}
                used, wait_s = first_decodable(finish, decoder.can_decode)
                if not np.isfinite(wait_s):
                    raise UserError(f"{name}: {k} stragglers of {learners} cannot be decoded")
                if name not in coded:  # one code's answers serve its k values, then go
                    coded = {name: {}}
                for learner in used:
                    if learner not in coded[name]:
                        coded[name][learner] = work.coded(matrix[learner])
                    decoder.add(learner, coded[name][learner])
                decode_start = time.perf_counter()
                from_ordinals(decoder.decode(), state.dtype)  # as the controller decodes
                decode_s = time.perf_counter() - decode_start
                del decoder
                columns = samples.setdefault((name, k), {})
                for column, value in (
                    ("round_s", collect_s + wait_s + decode_s),
                    ("update_s", wait_s + decode_s),
                    ("collect_s", collect_s),
                    ("decode_s", decode_s),
                    ("compute_s", max(compute.values())),
                    ("compute_per_agent_s", _per_agent_s(compute, counts)),
                ):
                    columns.setdefault(column, []).append(value)
        finally:
            torch.set_num_threads(threads)
        warm.theta, warm.opt_state = work.update.theta, work.update.opt_state
        del work, coded
        if after_round is not None:
            after_round()
    return _rows(setting, samples, matrices, codes=codes, learners=learners, clock="simulated")


def measure_wall(
    setting: Setting,
    *,
    codes: Sequence[str],
    learners: int,
    rounds: int,
    env_backend: str,
    seed: int,
    algorithm_options: dict[str, Any],
    after_round: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """The same rows from real worker processes (wall clock); for correctness checks and small N.

    ``after_round`` is called after each round of each code and k, outside the timings (not after
    the rounds of the baseline :func:`_plan` adds).
    """
    warm = warmed_up(setting, env_backend, seed, algorithm_options)
    registry = get_plugin_manager().registry("code")
    sampler = torch.Generator().manual_seed(seed)
    samples: dict[tuple[str, int], dict[str, list[float]]] = {}
    matrices: dict[str, np.ndarray] = {}
    shown = {(name, k) for name in codes for k in setting.stragglers}
    for name, k in _plan(codes, setting.stragglers):
        scheme = registry[name]()
        matrix = matrices.setdefault(
            name, scheme.assignment_matrix(warm.program.num_agents, learners, seed)
        )
        # Task N + i is agent i alone (a re-dispatched round completes with those).
        counts = [int(np.count_nonzero(row)) for row in matrix] + [1] * matrix.shape[1]
        stragglers = StragglerModel(count=k, delay_s=setting.delay_s, seed=seed)
        values: dict[str, list[float]] = samples.setdefault((name, k), {})
        with CodedController(
            warm.program, matrix, LocalBackend(learners), scheme=scheme, stragglers=stragglers
        ) as controller:
            for round_index in range(rounds):
                batch, collect_s = warm.minibatch(sampler)
                _, log = controller.update(
                    warm.theta,
                    warm.opt_state,
                    batch,
                    round_index,
                    seed=derive_seed(seed, round_index),
                )
                for column, value in (
                    ("round_s", collect_s + log.round_s),
                    ("update_s", log.round_s),
                    ("collect_s", collect_s),
                    ("decode_s", log.decode_s),
                    ("compute_s", max(log.compute_s.values())),
                    ("compute_per_agent_s", _per_agent_s(log.compute_s, dict(enumerate(counts)))),
                ):
                    values.setdefault(column, []).append(value)
                if after_round is not None and (name, k) in shown:
                    after_round()
    return _rows(setting, samples, matrices, codes=codes, learners=learners, clock="wall")
