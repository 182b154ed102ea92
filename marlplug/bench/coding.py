"""``marlplug bench coding``: the paper's training-time experiment (N = 15 learners, M in {8, 10}, the five
codes, the paper's k and t_s per scenario), on a simulated clock or on real processes; at larger sizes
too (``--agents 32 --learners 48``), to show where coding stops paying.

How a round is measured, and what each column of a row means: :mod:`marlplug.bench.coded_rounds`.
On a terminal, a progress bar on stderr counts the rounds (settings x rounds; on the wall clock x codes
x k values).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from marlplug.bench.coded_rounds import measure_setting, measure_wall
from marlplug.bench.coded_setting import Setting
from marlplug.bench.paper import (
    CODES,
    check_targets,
    markdown_table,
    plot_bars,
    read_reference,
    shape_summary,
)
from marlplug.errors import UserError
from marlplug.runs.reporting import stderr_progress

#: The paper's straggler settings: scenario -> (k values, t_s seconds, adversaries K).
PAPER_SETTINGS: dict[str, tuple[tuple[int, ...], float, int]] = {
    "cooperative_navigation": ((0, 1, 2), 0.25, 0),
    "predator_prey": ((0, 2, 4), 1.0, 4),
    "physical_deception": ((0, 5, 8), 1.0, 1),
    "keep_away": ((0, 5, 8), 1.5, 4),
}


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
