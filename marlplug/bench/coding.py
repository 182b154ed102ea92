"""``marlplug bench coding``: the paper's training-time experiment (N = 15 learners, M in {8, 10}, the five
codes, the paper's k and t_s per scenario), on a simulated clock or on real processes.

Per round the controller takes ``steps_per_iteration`` env steps and samples a minibatch (timed for
real); every active learner's coded update really runs and is timed; the injected delays are added on
a virtual clock and the round ends when the learners that finished first on that clock can be decoded
(the decode is real too). Learner compute and the env steps are measured once per round and shared by
all straggler counts k, so the codes and k values are compared on the same work. On a terminal, a
progress bar on stderr counts the rounds (settings x rounds; on the wall clock x codes x k values).
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
from marlplug.algorithms.protocol import LearnerProgram
from marlplug.bench.paper import (
    CODES,
    check_targets,
    markdown_table,
    plot_bars,
    read_reference,
    shape_summary,
)
from marlplug.coding import make_decoder
from marlplug.coding.exact import from_ordinals
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
    """The setting's MADDPG program and data, warmed up until a minibatch can be sampled."""
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
    while not warm.collector.ready():
        warm.collector.collect(warm.theta, warm.steps)
    return warm


def _row(setting: Setting, name: str, k: int, learners: int, clock: str, values: dict) -> dict:
    """One output row: the medians of ``values`` (``{column: [samples]}``) and the setting."""
    return {
        "scenario": setting.scenario,
        "agents": setting.agents,
        "stragglers": k,
        "code": name,
        **{column: statistics.median(samples) for column, samples in values.items()},
        "delay_s": setting.delay_s,
        "learners": learners,
        "clock": clock,
    }


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
    """Rows ``{scenario, agents, stragglers, code, round_s, ...}`` for every code and k (medians).

    Each round's learner updates run once per code and serve every k; the stragglers of each k are
    drawn from one :class:`StragglerModel` stream, as a run's controller draws them.
    ``after_round`` is called after each of the ``rounds`` rounds, outside the timings.
    """
    warm = _warmed_up(setting, env_backend, seed, algorithm_options)
    program = warm.program
    registry = get_plugin_manager().registry("code")
    schemes = {name: registry[name]() for name in codes}
    matrices = {
        name: scheme.assignment_matrix(program.num_agents, learners, seed)
        for name, scheme in schemes.items()
    }
    models = {
        (name, k): StragglerModel(count=k, delay_s=setting.delay_s, seed=seed)
        for name in codes
        for k in setting.stragglers
    }
    sampler = torch.Generator().manual_seed(seed)
    samples: dict[tuple[str, int], dict[str, list[float]]] = {}
    threads = torch.get_num_threads()
    for round_index in range(rounds):
        batch, collect_s = warm.minibatch(sampler)
        round_seed = derive_seed(seed, round_index)
        state = state_rows(warm.theta, warm.opt_state)
        torch.set_num_threads(1)
        try:
            for name in codes:
                matrix = matrices[name]
                answers = {
                    j: learner_compute(program, matrix[j], state, batch, seed=round_seed)
                    for j in range(learners)
                    if matrix[j].any()
                }
                for k in setting.stragglers:
                    delays = models[name, k].delays(sorted(answers))
                    decoder = make_decoder(matrix, scheme=schemes[name])
                    finish = {j: answers[j].compute_s + delays[j] for j in answers}
                    used, wait_s = first_decodable(finish, decoder.can_decode)
                    if not np.isfinite(wait_s):
                        raise UserError(f"{name}: {k} stragglers of {learners} cannot be decoded")
                    for learner in used:
                        decoder.add(learner, answers[learner].coded)
                    decode_start = time.perf_counter()
                    from_ordinals(decoder.decode(), state.dtype)  # as the controller decodes
                    decode_s = time.perf_counter() - decode_start
                    columns = samples.setdefault((name, k), {})
                    for column, value in (
                        ("round_s", collect_s + wait_s + decode_s),
                        ("update_s", wait_s + decode_s),
                        ("collect_s", collect_s),
                        ("compute_s", max(a.compute_s for a in answers.values())),
                    ):
                        columns.setdefault(column, []).append(value)
        finally:
            torch.set_num_threads(threads)
        agents = list(range(program.num_agents))
        update = program.update(warm.theta, warm.opt_state, batch, agents, round_seed)
        warm.theta, warm.opt_state = update.theta, update.opt_state
        if after_round is not None:
            after_round()
    return [
        _row(setting, name, k, learners, "simulated", values)
        for (name, k), values in samples.items()
    ]


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

    ``after_round`` is called after each round of each code and k, outside the timings.
    """
    warm = _warmed_up(setting, env_backend, seed, algorithm_options)
    registry = get_plugin_manager().registry("code")
    sampler = torch.Generator().manual_seed(seed)
    rows = []
    for name in codes:
        scheme = registry[name]()
        matrix = scheme.assignment_matrix(warm.program.num_agents, learners, seed)
        for k in setting.stragglers:
            stragglers = StragglerModel(count=k, delay_s=setting.delay_s, seed=seed)
            values: dict[str, list[float]] = {"round_s": [], "update_s": []}
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
                    values["round_s"].append(collect_s + log.round_s)
                    values["update_s"].append(log.round_s)
                    if after_round is not None:
                        after_round()
            rows.append(_row(setting, name, k, learners, "wall", values))
    return rows


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
    help="Print a JSON list of {scenario, agents, stragglers, code, round_s}.",
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
    settings, chosen_codes = paper_settings(chosen, counts), list(codes) or list(CODES)
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
    for line in check_targets(rows, learners):
        click.echo(line)
    for entry in shape_summary(rows, paper):
        click.echo(json.dumps(entry))
