"""``marlplug bench coding``: the paper's training-time experiment (N = 15 learners, M in {8, 10}, the five
codes, the paper's k and t_s per scenario), on a simulated clock or on real processes; at larger sizes
too (``--agents 32 --learners 48``), to show where coding stops paying.

Per round the controller takes ``steps_per_iteration`` env steps and samples a minibatch (timed for
real). On the simulated clock each agent's update runs once per round, in one call for all M agents
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

The warm-up takes one iteration's env steps and one update: a minibatch is drawn with replacement from
the replay buffer, so its size, not the number of distinct transitions in it, sets the update's cost.
On a terminal, a progress bar on stderr counts the rounds (settings x rounds; on the wall clock x codes
x k values).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
import torch

from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.maddpg_data import ExperienceCollector
from marlplug.algorithms.protocol import AgentUpdate, LearnerProgram
from marlplug.bench.paper import (
    CODES,
    check_targets,
    markdown_table,
    plot_bars,
    read_reference,
    shape_summary,
)
from marlplug.coding import make_decoder
from marlplug.coding.exact import from_ordinals, to_ordinals
from marlplug.coding.stragglers import StragglerModel, first_decodable
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController
from marlplug.distributed.learner import learner_compute, state_rows
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.errors import UserError
from marlplug.plugins import get_plugin_manager
from marlplug.runs.reporting import stderr_progress
from marlplug.seeding import derive_seed

#: The paper's straggler settings: scenario -> (k values, t_s seconds, adversaries K).
PAPER_SETTINGS: dict[str, tuple[tuple[int, ...], float, int]] = {
    "cooperative_navigation": ((0, 1, 2), 0.25, 0),
    "predator_prey": ((0, 2, 4), 1.0, 4),
    "physical_deception": ((0, 5, 8), 1.0, 1),
    "keep_away": ((0, 5, 8), 1.5, 4),
}


@dataclass
class Setting:
    """One bar group: a scenario with M agents, and its straggler counts and delay."""

    scenario: str
    agents: int
    stragglers: tuple[int, ...]
    delay_s: float
    adversaries: int


@dataclass
class Warm:
    """A setting ready to time: its learner program, a collector whose replay buffer can serve a
    minibatch, and the agents' state rows."""

    program: LearnerProgram
    collector: ExperienceCollector
    theta: torch.Tensor
    opt_state: torch.Tensor
    steps: int

    def minibatch(self, sampler: torch.Generator) -> tuple[Any, float]:
        """Take the iteration's env steps and sample a minibatch: ``(batch, seconds)``."""
        start = time.perf_counter()
        self.collector.collect(self.theta, self.steps)
        return self.collector.sample(sampler), time.perf_counter() - start


def _warmed_up(
    setting: Setting, env_backend: str, seed: int, algorithm_options: dict[str, Any]
) -> Warm:
    """The setting's MADDPG program and data, after one iteration's env steps and one update.

    A minibatch is drawn with replacement, so one iteration's transitions can serve it: the update
    costs the same as on a full buffer (at M = 32 on vmas, filling the buffer with ``minibatch_size``
    transitions first took minutes). The update is timed nowhere; it takes the first call's costs
    out of the first round.
    """
    from marlplug.envs import make_env

    env_options: dict[str, Any] = {"agents": setting.agents}
    if setting.adversaries:
        env_options["adversaries"] = setting.adversaries
    env = make_env(setting.scenario, backend=env_backend, seed=seed, **env_options)
    maddpg = MADDPG(**algorithm_options).program(MultiAgentEnvAdapter(env).agents)
    program = maddpg
    theta, opt_state = program.init_state(seed)
    warm = Warm(
        program,
        ExperienceCollector(env, maddpg, seed=seed),
        theta,
        opt_state,
        maddpg.options.steps_per_iteration,
    )
    batch, _ = warm.minibatch(torch.Generator().manual_seed(derive_seed(seed, _WARM_UP)))
    one_agent = np.eye(1, program.num_agents).ravel()
    learner_compute(program, one_agent, state_rows(theta, opt_state), batch, seed=seed)
    return warm


#: Mixed into the seed of the warm-up's minibatch, apart from the rounds' sampler.
_WARM_UP = 11


class _Recorded:
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
    recorded = _Recorded(program)
    everyone = learner_compute(recorded, np.ones(num_agents), state, batch, seed=seed)
    update = recorded.last
    assert update is not None
    one_agent_s = everyone.compute_s
    if num_agents > 1:
        row = np.eye(1, num_agents, one_agent).ravel()
        one_agent_s = learner_compute(program, row, state, batch, seed=seed).compute_s
    ordinals = to_ordinals(state_rows(update.theta.detach(), update.opt_state.detach()))
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
    warm = _warmed_up(setting, env_backend, seed, algorithm_options)
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
    warm = _warmed_up(setting, env_backend, seed, algorithm_options)
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


def paper_settings(scenarios: Sequence[str], agent_counts: Sequence[int]) -> list[Setting]:
    """The paper's setting of every scenario at every M (at most M - 1 adversaries)."""
    settings = []
    for scenario in scenarios:
        stragglers, delay_s, adversaries = PAPER_SETTINGS[scenario]
        for agents in agent_counts:
            adversaries_here = min(adversaries, agents - 1)
            settings.append(Setting(scenario, agents, stragglers, delay_s, adversaries_here))
    return settings


def timed_rounds(setting: Setting, *, clock: str, codes: int, rounds: int) -> int:
    """Rounds ``measure_setting`` (``clock="simulated"``: every code and k share a round) or
    ``measure_wall`` (each code and k runs its own rounds) takes for ``setting``.

    Examples:
        >>> setting = Setting("keep_away", 8, (0, 5, 8), 1.5, 4)
        >>> timed_rounds(setting, clock="simulated", codes=5, rounds=3)
        3
        >>> timed_rounds(setting, clock="wall", codes=5, rounds=3)
        45
    """
    return rounds if clock == "simulated" else codes * len(setting.stragglers) * rounds


def cost_table(rows: list[dict[str, Any]]) -> str:
    """What each row's round costs, one line per row (markdown): the round beside the uncoded
    straggler-free one, the decode, and the learners' compute per agent (see the module docstring).

    Examples:
        >>> row = {"scenario": "keep_away", "agents": 32, "learners": 48, "stragglers": 5,
        ...        "code": "mds", "agents_per_learner": 32, "round_s": 9.5, "decode_s": 0.25,
        ...        "round_over_uncoded_k0": 2.5, "compute_per_agent_s": 0.2}
        >>> print(cost_table([row]).splitlines()[-1])
        | keep_away | 32 | 48 | 5 | mds | 32 | 9.500 | 2.50 | 0.250 | 0.2000 |
    """
    lines = [
        "| scenario | M | N | k | code | agents/learner | round s | x uncoded k=0 | decode s "
        "| compute s/agent |",
        "|" + "---|" * 10,
    ]
    for row in rows:
        lines.append(
            f"| {row['scenario']} | {row['agents']} | {row['learners']} | {row['stragglers']} "
            f"| {row['code']} | {row['agents_per_learner']} | {row['round_s']:.3f} "
            f"| {row['round_over_uncoded_k0']:.2f} | {row['decode_s']:.3f} "
            f"| {row['compute_per_agent_s']:.4f} |"
        )
    return "\n".join(lines)


@click.command("coding")
@click.option(
    "--clock", type=click.Choice(["simulated", "wall"]), default="simulated", show_default=True
)
@click.option(
    "--scenario",
    "scenarios",
    multiple=True,
    type=click.Choice(sorted(PAPER_SETTINGS)),
    help="Scenarios to run (default: all four).",
)
@click.option(
    "--agents",
    "agent_counts",
    multiple=True,
    type=click.IntRange(min=1),
    help="M values (default: 8 and 10).",
)
@click.option("--learners", type=click.IntRange(min=1), default=15, show_default=True, help="N.")
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Rounds per setting (median).",
)
@click.option(
    "--code", "codes", multiple=True, type=click.Choice(CODES), help="Codes (default: all five)."
)
@click.option("--env-backend", type=click.Choice(["mpe", "vmas"]), default="mpe", show_default=True)
@click.option("--minibatch-size", type=click.IntRange(min=1), default=1024, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--reference",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    default=None,
    help="The authors' numbers (CSV) [default: the table shipped with marlplug].",
)
@click.option(
    "--plot",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the grouped bar chart here (e.g. docs/images/coding_round_time.png).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a JSON list of {scenario, agents, stragglers, code, round_s, decode_s, "
    "compute_per_agent_s, round_over_uncoded_k0, ...}.",
)
def coding(
    clock: str,
    scenarios: tuple[str, ...],
    agent_counts: tuple[int, ...],
    learners: int,
    rounds: int,
    codes: tuple[str, ...],
    env_backend: str,
    minibatch_size: int,
    seed: int,
    reference: Path | None,
    plot: Path | None,
    as_json: bool,
) -> None:
    """The paper's coded-training experiment: round time per code and number of stragglers."""
    if rounds < 1 or learners < 1:
        raise UserError("--rounds and --learners must be at least 1")
    chosen = list(scenarios) or list(PAPER_SETTINGS)
    counts = list(agent_counts) or [8, 10]
    if max(counts) > learners:
        raise UserError(
            f"--agents: M={max(counts)} needs at least as many learners (--learners {learners})"
        )
    options = {"minibatch_size": minibatch_size, "learning_starts": minibatch_size}
    measure = measure_setting if clock == "simulated" else measure_wall
    settings = paper_settings(chosen, counts)
    chosen_codes = list(dict.fromkeys(codes)) or list(CODES)
    total = sum(
        timed_rounds(setting, clock=clock, codes=len(chosen_codes), rounds=rounds)
        for setting in settings
    )
    rows: list[dict[str, Any]] = []
    with stderr_progress(total, label="bench coding") as progress:
        for setting in settings:
            progress.advance(f"{setting.scenario} M={setting.agents}", steps=0)
            rows += measure(
                setting,
                codes=chosen_codes,
                learners=learners,
                rounds=rounds,
                env_backend=env_backend,
                seed=seed,
                algorithm_options=options,
                after_round=progress.advance,
            )
    paper = read_reference(reference)
    if plot is not None:
        plot_bars(rows, paper, plot)
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    click.echo(markdown_table(rows, paper))
    click.echo("")
    click.echo(cost_table(rows))
    click.echo("")
    for line in check_targets(rows, learners):
        click.echo(line)
    for entry in shape_summary(rows, paper):
        click.echo(json.dumps(entry))
