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

import csv
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

from marlplug.algorithms.env_adapter import MultiAgentEnvAdapter
from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.maddpg_data import ExperienceCollector
from marlplug.algorithms.row_bridge import MaddpgRows
from marlplug.coding import make_decoder
from marlplug.coding.exact import from_ordinals
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController
from marlplug.distributed.learner import learner_compute
from marlplug.distributed.stragglers import StragglerModel
from marlplug.errors import UserError
from marlplug.plotting import saved_figure
from marlplug.plugins import get_plugin_manager
from marlplug.runs.reporting import stderr_progress
from marlplug.seeding import agent_seed

#: The paper's straggler settings: scenario -> (k values, t_s seconds, adversaries K).
PAPER_SETTINGS: dict[str, tuple[tuple[int, ...], float, int]] = {
    "cooperative_navigation": ((0, 1, 2), 0.25, 0),
    "predator_prey": ((0, 2, 4), 1.0, 4),
    "physical_deception": ((0, 5, 8), 1.0, 1),
    "keep_away": ((0, 5, 8), 1.5, 4),
}
CODES = ("uncoded", "mds", "random_sparse", "replication", "ldpc")
DEFAULT_REFERENCE = Path("docs/data/paper_training_time.csv")


@dataclass
class Setting:
    """One bar group: a scenario with M agents, and its straggler counts and delay."""

    scenario: str
    agents: int
    stragglers: tuple[int, ...]
    delay_s: float
    adversaries: int


def _warmed_up(
    setting: Setting, env_backend: str, seed: int, algorithm_options: dict[str, Any]
) -> tuple[MaddpgRows, ExperienceCollector, torch.Tensor]:
    """The setting's MADDPG program, a collector whose replay buffer can serve a minibatch, and θ."""
    from marlplug.envs import make_env

    env_options: dict[str, Any] = {"agents": setting.agents}
    if setting.adversaries:
        env_options["adversaries"] = setting.adversaries
    env = make_env(setting.scenario, backend=env_backend, seed=seed, **env_options)
    program = MaddpgRows(MADDPG(**algorithm_options).program(MultiAgentEnvAdapter(env).agents))
    collector = ExperienceCollector(env, program, seed=seed)
    theta = program.init_state(seed)
    while not collector.ready():
        collector.collect(theta, program.options.steps_per_iteration)
    return program, collector, theta


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

    ``after_round`` is called after each of the ``rounds`` rounds, outside the timings.
    """
    program, collector, theta = _warmed_up(setting, env_backend, seed, algorithm_options)
    registry = get_plugin_manager().registry("code")
    schemes = {name: registry[name]() for name in codes}
    matrices = {
        name: scheme.assignment_matrix(program.num_agents, learners, seed)
        for name, scheme in schemes.items()
    }
    sampler = torch.Generator().manual_seed(seed)
    samples: dict[tuple[str, int], list[dict[str, float]]] = {}
    threads = torch.get_num_threads()
    for round_index in range(rounds):
        start = time.perf_counter()
        collector.collect(theta, program.options.steps_per_iteration)
        batch = collector.sample(sampler)
        collect_s = time.perf_counter() - start
        torch.set_num_threads(1)
        try:
            for name in codes:
                matrix = matrices[name]
                coded, compute_s = {}, {}
                for learner in range(learners):
                    if matrix[learner].any():
                        coded[learner], compute_s[learner] = learner_compute(
                            program,
                            matrix[learner],
                            theta,
                            batch,
                            round_index=round_index,
                            seed=seed,
                        )
                for k in setting.stragglers:
                    delays = StragglerModel(
                        count=k, delay_s=setting.delay_s, seed=seed * 1000 + round_index
                    ).delays(sorted(coded))
                    decoder = make_decoder(matrix, scheme=schemes[name])
                    finish = {j: compute_s[j] + delays[j] for j in coded}
                    for learner in sorted(finish, key=lambda j: (finish[j], j)):
                        decoder.add(learner, coded[learner])
                        if decoder.decodable:
                            wait_s = finish[learner]
                            break
                    else:
                        raise UserError(f"{name}: {k} stragglers of {learners} cannot be decoded")
                    decode_start = time.perf_counter()
                    from_ordinals(decoder.decode(), theta.dtype)  # as the controller decodes
                    decode_s = time.perf_counter() - decode_start
                    samples.setdefault((name, k), []).append(
                        {
                            "round_s": collect_s + wait_s + decode_s,
                            "update_s": wait_s + decode_s,
                            "collect_s": collect_s,
                            "compute_s": max(compute_s.values()),
                        }
                    )
        finally:
            torch.set_num_threads(threads)
        agents = list(range(program.num_agents))
        theta = program.update(
            theta, agents, batch, [agent_seed(seed, round_index, i) for i in agents]
        )
        if after_round is not None:
            after_round()
    rows = []
    for (name, k), values in samples.items():
        rows.append(
            {
                "scenario": setting.scenario,
                "agents": setting.agents,
                "stragglers": k,
                "code": name,
                "round_s": statistics.median(v["round_s"] for v in values),
                "update_s": statistics.median(v["update_s"] for v in values),
                "collect_s": statistics.median(v["collect_s"] for v in values),
                "compute_s": statistics.median(v["compute_s"] for v in values),
                "delay_s": setting.delay_s,
                "learners": learners,
                "clock": "simulated",
            }
        )
    return rows


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
    program, collector, theta = _warmed_up(setting, env_backend, seed, algorithm_options)
    registry = get_plugin_manager().registry("code")
    sampler = torch.Generator().manual_seed(seed)
    rows = []
    for name in codes:
        scheme = registry[name]()
        matrix = scheme.assignment_matrix(program.num_agents, learners, seed)
        for k in setting.stragglers:
            stragglers = StragglerModel(count=k, delay_s=setting.delay_s, seed=seed)
            times: list[tuple[float, float]] = []
            with CodedController(
                program,
                matrix,
                LocalBackend(learners),
                scheme=scheme,
                stragglers=stragglers,
                seed=seed,
            ) as controller:
                for round_index in range(rounds):
                    start = time.perf_counter()
                    collector.collect(theta, program.options.steps_per_iteration)
                    batch = collector.sample(sampler)
                    collect_s = time.perf_counter() - start
                    _, log = controller.update(theta, batch, round_index)
                    times.append((collect_s + log.round_s, log.round_s))
                    if after_round is not None:
                        after_round()
            rows.append(
                {
                    "scenario": setting.scenario,
                    "agents": setting.agents,
                    "stragglers": k,
                    "code": name,
                    "round_s": statistics.median(t[0] for t in times),
                    "update_s": statistics.median(t[1] for t in times),
                    "delay_s": setting.delay_s,
                    "learners": learners,
                    "clock": "wall",
                }
            )
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


# ---------------------------------------------------------------------- comparison with the paper


def read_reference(path: Path) -> list[dict[str, Any]]:
    """The authors' numbers (scenario, agents, learners, stragglers, code, time_s)."""
    with path.open() as handle:
        return [
            {
                **row,
                "agents": int(row["agents"]),
                "stragglers": int(row["stragglers"]),
                "time_s": float(row["time_s"]),
            }
            for row in csv.DictReader(handle)
        ]


def shape_summary(
    rows: list[dict[str, Any]], reference: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per (scenario, M, k): the fastest code and ``mds / uncoded(k=0)``, ours beside the paper's."""

    def index(items: list[dict[str, Any]], key: str) -> dict[tuple[str, int, int, str], float]:
        return {(r["scenario"], r["agents"], r["stragglers"], r["code"]): r[key] for r in items}

    ours, theirs = index(rows, "round_s"), index(reference, "time_s")
    summary = []
    for scenario, agents, k in sorted({key[:3] for key in ours}):
        entry: dict[str, Any] = {"scenario": scenario, "agents": agents, "stragglers": k}
        for label, table in (("ours", ours), ("paper", theirs)):
            times = {
                c: v for (s, m, kk, c), v in table.items() if (s, m, kk) == (scenario, agents, k)
            }
            base = table.get((scenario, agents, 0, "uncoded"))
            if times and base:
                entry[f"{label}_fastest"] = min(times, key=lambda c: times[c])
                if "mds" in times:
                    entry[f"{label}_mds_over_uncoded_k0"] = times["mds"] / base
                if "uncoded" in times:
                    entry[f"{label}_uncoded_over_uncoded_k0"] = times["uncoded"] / base
        summary.append(entry)
    return summary


def check_targets(rows: list[dict[str, Any]], learners: int) -> list[str]:
    """The issue's targets on the simulated clock, one line each, ``ok`` or ``MISSED``."""
    lines = []
    table = {(r["scenario"], r["agents"], r["stragglers"], r["code"]): r for r in rows}
    for (scenario, agents, k, code), row in sorted(table.items()):
        if code != "mds":
            continue
        base = table.get((scenario, agents, 0, "uncoded"))
        uncoded = table.get((scenario, agents, k, "uncoded"))
        if base is None or uncoded is None:
            continue
        ratio = row["round_s"] / base["round_s"]
        update_ratio = row["update_s"] / base["update_s"]
        note = f"; learner round alone: {update_ratio:.2f}x"
        if k == 0:
            verdict = "ok" if ratio <= 1.3 else "MISSED"
            lines.append(
                f"{verdict}: {scenario} M={agents} k=0: mds/uncoded = {ratio:.2f} (target <= 1.3){note}"
            )
        elif 1 <= k <= learners - agents:
            waited = uncoded["update_s"]
            verdict = "ok" if ratio <= 1.2 and waited >= row["delay_s"] else "MISSED"
            lines.append(
                f"{verdict}: {scenario} M={agents} k={k}: mds/uncoded(k=0) = {ratio:.2f} (target <= 1.2), "
                f"uncoded waits {waited:.2f} s (target >= t_s = {row['delay_s']:g} s){note}"
            )
    return lines


def plot_bars(rows: list[dict[str, Any]], reference: list[dict[str, Any]], path: Path) -> Path:
    """Grouped bars (ours, relative to uncoded at k=0) with the paper's ratios as black dots."""
    groups = sorted({(r["scenario"], r["agents"]) for r in rows})
    columns = min(4, len(groups))
    lines = (len(groups) + columns - 1) // columns
    with saved_figure(
        path, figsize=(4 * columns, 3.2 * lines), nrows=lines, ncols=columns, squeeze=False
    ) as (_, axes_grid):
        codes = [c for c in CODES if any(r["code"] == c for r in rows)]
        width = 0.8 / max(1, len(codes))
        for axes, (scenario, agents) in zip(axes_grid.flat, groups, strict=False):
            mine = {
                (r["stragglers"], r["code"]): r["round_s"]
                for r in rows
                if (r["scenario"], r["agents"]) == (scenario, agents)
            }
            paper = {
                (r["stragglers"], r["code"]): r["time_s"]
                for r in reference
                if (r["scenario"], r["agents"]) == (scenario, agents)
            }
            ks = sorted({k for k, _ in mine})
            base = mine.get((0, "uncoded"), 1.0)
            paper_base = paper.get((0, "uncoded"))
            for position, code in enumerate(codes):
                xs = np.arange(len(ks)) + (position - (len(codes) - 1) / 2) * width
                axes.bar(xs, [mine.get((k, code), np.nan) / base for k in ks], width, label=code)
                if paper_base:
                    axes.scatter(
                        xs,
                        [paper.get((k, code), np.nan) / paper_base for k in ks],
                        color="black",
                        s=8,
                        zorder=3,
                    )
            axes.set_xticks(range(len(ks)), [f"k={k}" for k in ks])
            axes.set_title(f"{scenario.replace('_', ' ')}, M={agents}", fontsize=9)
            axes.set_ylabel("round time / uncoded k=0", fontsize=8)
        for axes in list(axes_grid.flat)[len(groups) :]:
            axes.axis("off")
        axes_grid.flat[0].legend(fontsize=7, title="bars: marlplug; dots: paper", title_fontsize=7)
    return path


def markdown_table(rows: list[dict[str, Any]], reference: list[dict[str, Any]]) -> str:
    """Per-round times, ours (seconds) and the paper's (their unit), one line per (scenario, M, k)."""
    paper = {
        (r["scenario"], r["agents"], r["stragglers"], r["code"]): r["time_s"] for r in reference
    }
    codes = [c for c in CODES if any(r["code"] == c for r in rows)]
    mine = {(r["scenario"], r["agents"], r["stragglers"], r["code"]): r["round_s"] for r in rows}
    header = "| scenario | M | k | " + " | ".join(codes) + " | paper: " + " / ".join(codes) + " |"
    lines = [header, "|" + "---|" * (3 + len(codes) + 1)]
    for key in sorted({k[:3] for k in mine}):
        ours = " | ".join(f"{mine.get((*key, c), float('nan')):.3f}" for c in codes)
        theirs = " / ".join(f"{paper[(*key, c)]:.1f}" if (*key, c) in paper else "-" for c in codes)
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {ours} | {theirs} |")
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
    type=click.Path(path_type=Path),
    default=DEFAULT_REFERENCE,
    show_default=True,
    help="The authors' numbers (CSV); skipped if missing.",
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
    reference: Path,
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
    paper = read_reference(reference) if reference.is_file() else []
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
