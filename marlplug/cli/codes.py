"""``marlplug codes analyze``: compare coding schemes' cost, straggler tolerance and round time."""

from __future__ import annotations

import json
import math
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from marlplug.coding.analysis import AnalysisSettings, CodeReport, analyze_code, recommend
from marlplug.coding.decoding import DEFAULT_MAX_CONDITION
from marlplug.coding.stragglers import StragglerModel
from marlplug.errors import PluginError, UserError
from marlplug.plugins import Component, get_plugin_manager


@click.group()
def codes() -> None:
    """Coding schemes for coded distributed training."""


def _format(value: float, spec: str) -> str:
    return format(value, spec) if math.isfinite(value) else "never"


def _table(reports: list[CodeReport], settings: AnalysisSettings) -> Table:
    table = Table(
        title=f"Codes for M={settings.num_agents} agents on N={settings.num_learners} learners",
        caption=f"k=…: P(decodable) with k learners missing. E(round): {settings.compute_s:g} s "
        f"compute per agent, {settings.stragglers}",
    )
    ks = sorted(reports[0].recovery) if reports else []
    for column in (
        "code",
        "density",
        "tolerance",
        "worst cond.",
        "E(round) s",
        *[f"k={k}" for k in ks],
    ):
        table.add_column(column, justify="left" if column == "code" else "right")
    for report in reports:
        table.add_row(
            report.name,
            f"{report.density:.2f}",
            "none" if report.tolerance is None else str(report.tolerance),
            _format(report.worst_condition, ".2g"),
            _format(report.expected_round_s, ".3f"),
            *[f"{report.recovery[k]:.2f}" for k in ks],
        )
    return table


def _analyze(
    name: str, scheme_class: Any, entry: Component, settings: AnalysisSettings
) -> CodeReport:
    """Analyze one code; a plugin's code that crashes becomes a :class:`PluginError` naming it."""
    try:
        return analyze_code(name, scheme_class(), settings)
    except UserError:
        raise
    except Exception as exc:  # a broken third-party code must not end the command for every code
        raise PluginError(
            f"code '{name}' of plugin '{entry.plugin}' (distribution '{entry.distribution}') "
            f"failed: {type(exc).__name__}: {exc}"
        ) from exc


@codes.command()
@click.option("--agents", "-M", "num_agents", type=int, required=True, help="Number of agents M.")
@click.option(
    "--learners", "-N", "num_learners", type=int, required=True, help="Number of learners N >= M."
)
@click.option(
    "--codes",
    "code_names",
    default=None,
    help="Comma-separated code names (default: all installed).",
)
@click.option(
    "--compute-s",
    type=float,
    default=0.1,
    show_default=True,
    help="Compute seconds per assigned agent.",
)
@click.option(
    "--delay-s", type=float, default=1.0, show_default=True, help="How late a straggler answers."
)
@click.option(
    "--stragglers",
    type=int,
    default=1,
    show_default=True,
    help="Stragglers per round (fixed count).",
)
@click.option(
    "--straggle-prob",
    type=float,
    default=None,
    help="Instead: each learner straggles with this probability.",
)
@click.option(
    "--max-condition",
    type=float,
    default=DEFAULT_MAX_CONDITION,
    show_default=True,
    help="Subsets worse conditioned than this count as not decodable.",
)
@click.option(
    "--rounds",
    type=int,
    default=2000,
    show_default=True,
    help="Monte Carlo rounds for round times.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of matrices and simulations."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object for tools.")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Save a PNG figure here.",
)
def analyze(
    num_agents: int,
    num_learners: int,
    code_names: str | None,
    compute_s: float,
    delay_s: float,
    stragglers: int,
    straggle_prob: float | None,
    max_condition: float,
    rounds: int,
    seed: int,
    as_json: bool,
    plot_path: str | None,
) -> None:
    """Density, straggler tolerance, recovery probability, conditioning and round time of each code."""
    if straggle_prob is not None:
        if not 0.0 <= straggle_prob <= 1.0:
            raise UserError(f"--straggle-prob: must be between 0 and 1, got {straggle_prob}")
        model = StragglerModel("random", probability=straggle_prob, delay_s=delay_s)
    else:
        model = StragglerModel("fixed", count=stragglers, delay_s=delay_s)
    settings = AnalysisSettings(
        num_agents=num_agents,
        num_learners=num_learners,
        compute_s=compute_s,
        stragglers=model,
        max_condition=max_condition,
        rounds=rounds,
        seed=seed,
    )
    registry = get_plugin_manager().registry("code")
    explicit = code_names is not None
    names = (
        [n.strip() for n in code_names.split(",") if n.strip()] if code_names else list(registry)
    )
    reports: list[CodeReport] = []
    skipped: dict[str, str] = {}
    for name in names:
        try:  # a lazily registered code is imported and checked here: it may fail alone
            scheme_class = registry.get_component(name, field="--codes")
            reports.append(_analyze(name, scheme_class, registry.entry(name), settings))
        except UserError as exc:
            if explicit:
                raise
            skipped[name] = str(exc)
    choice = recommend(reports)
    if plot_path:
        from marlplug.coding.plots import plot_analysis

        plot_analysis(reports, settings, plot_path)
    if as_json:
        payload = {
            "agents": num_agents,
            "learners": num_learners,
            "compute_s": compute_s,
            "stragglers": repr(model),
            "max_condition": max_condition,
            "codes": [report.as_json() for report in reports],
            "skipped": skipped,
            "recommended": None if choice is None else {"name": choice[0], "reason": choice[1]},
        }
        click.echo(json.dumps(payload, indent=2))
        return
    console = Console(width=max(Console().width, 150))
    console.print(_table(reports, settings))
    for name, reason in skipped.items():
        console.print(f"skipped {name}: {reason}", style="yellow")
    if choice is None:
        console.print("No code decodes under these settings.", style="red")
    else:
        console.print(f"Recommended: [bold]{choice[0]}[/bold]: {choice[1]}")
    if plot_path:
        console.print(f"Plot saved to {plot_path}")
