"""Learning parity, like the paper's reward figure: coded MADDPG against centralized MADDPG, same seed,
both trained by ``marlplug train``'s orchestrator, both evaluated with deterministic actions.

A run is cut into chunks: after each chunk of ``--eval-every`` iterations the orchestrator stops
(writing its checkpoint) and the run's actors are evaluated on fixed evaluation episodes
(:func:`marlplug.envs.evaluate.evaluate`, greedy actions); the next chunk resumes the run, which is
bit-identical to a run never stopped. So a curve is the evaluation return against env steps, not
the noisy return of the exploring training episodes.

``python -m marlplug.bench.parity --scenario cooperative_navigation --iterations 1500
--eval-every 150 --seeds 0 1 2 --plot docs/images/coding_parity.png`` trains, per scenario,
centralized MADDPG for every seed and coded MADDPG (``mds`` on N learners, k stragglers, simulated
clock) for the first seed, and plots every curve with the random policy's return as a reference.
"""

from __future__ import annotations

import json
import math
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from marlplug.algorithms.acting import acting_policy
from marlplug.config import MarlplugConfig, load_config
from marlplug.envs import make_env
from marlplug.envs.evaluate import evaluate
from marlplug.envs.policies import SCRIPTED_SCENARIOS, random_policy, scripted_policy
from marlplug.errors import UserError
from marlplug.plotting import saved_figure
from marlplug.plugins import get_component
from marlplug.train.orchestrator import run

#: The paper's four scenarios (marlplug names).
SCENARIOS = ("cooperative_navigation", "predator_prey", "physical_deception", "keep_away")


def parity_config(
    scenario: str,
    *,
    coded: bool,
    iterations: int,
    agents: int | None,
    learners: int,
    stragglers: int,
    delay_s: float,
    seed: int,
    options: dict[str, Any],
    env_backend: str = "mpe",
    num_envs: int = 1,
) -> MarlplugConfig:
    """The run's config: MADDPG on ``scenario`` (``env_backend``, ``num_envs`` copies: VMAS steps
    them as one batch), with a ``coding:`` section if ``coded`` (``mds`` on ``learners`` learners,
    ``stragglers`` delayed by ``delay_s`` on the simulated clock).

    Examples:
        >>> config = parity_config("cooperative_navigation", coded=True, iterations=10, agents=3,
        ...     learners=5, stragglers=1, delay_s=0.25, seed=0, options={})
        >>> config.coding.scheme.name, config.coding.learners, config.train.updates
        ('mds', 5, 10)
    """
    env: dict[str, Any] = {"name": scenario, "backend": env_backend}
    if agents is not None:
        env["agents"] = agents
    data: dict[str, Any] = {
        "seed": seed,
        "env": env,
        "algorithm": {"name": "maddpg", **options},
        "train": {"updates": iterations, "checkpoint_every": iterations, "num_envs": num_envs},
        "logging": {"progress": False},
    }
    if coded:
        data["coding"] = {
            "scheme": "mds",
            "learners": learners,
            "clock": "simulated",
            "stragglers": {"count": stragglers, "delay_s": delay_s},
        }
    return load_config(data=data)


def evaluation_curve(
    config: MarlplugConfig, *, eval_every: int, episodes: int, folder: Path
) -> list[dict[str, float]]:
    """Train ``config`` for ``config.train.updates`` iterations in chunks of ``eval_every``;
    after each chunk (and before the first) evaluate the actors on ``episodes`` greedy episodes of
    the mpe env (the paper's, whichever backend trained them: the specs are the same).

    Returns:
        One point per evaluation: ``iteration``, ``env_steps``, ``return`` (team, mean over the
        episodes) and the mean return of each agent group (``return/<group>``).
    """
    env = make_env(config.env.name, backend="mpe", seed=0, **config.env.options.model_dump())
    algorithm = get_component("algorithm", config.algorithm.name, field="algorithm.name")(
        **config.algorithm.options.model_dump()
    )
    program = algorithm.bind(env, config)
    run_dir = folder / "run"
    points: list[dict[str, float]] = []

    def point(theta: Any, iteration: int, env_steps: int) -> None:
        policy = acting_policy(program, env, theta)
        if policy is None:
            raise UserError(f"algorithm.name: '{config.algorithm.name}' has no acting policy")
        result = evaluate(env, policy, episodes=episodes, seed=config.seed)
        entry = {"iteration": iteration, "env_steps": env_steps, "return": result.mean}
        entry.update({f"return/{g}": v for g, v in result.group_means.items()})
        points.append(entry)

    point(program.init_state(config.seed)[0], 0, 0)
    done = 0
    while done < config.train.updates:
        target = min(done + eval_every, config.train.updates)
        if done == 0:
            result = run(config, iterations=target, run_dir=run_dir, progress=False)
        else:
            result = run(config, iterations=target, resume_dir=run_dir, progress=False)
        done = target
        point(result.theta, done, result.total_frames)
    env.close()
    return points


def parity_references(
    scenario: str, agents: int | None, episodes: int, seed: int
) -> dict[str, Any]:
    """The references the curves are read against, on mpe: the uniform random policy's mean team
    return (``random``) and mean return per group (``random_groups``), and where the scenario has
    a scripted oracle (cooperative navigation) its mean team return (``scripted``)."""
    options: dict[str, Any] = {} if agents is None else {"agents": agents}
    env = make_env(scenario, seed=0, **options)
    try:
        result = evaluate(env, random_policy(env), episodes=episodes, seed=seed)
        references: dict[str, Any] = {
            "random": result.mean,
            "random_groups": result.group_means,
        }
        if scenario in SCRIPTED_SCENARIOS:
            oracle = scripted_policy(env, scenario=scenario)
            references["scripted"] = evaluate(env, oracle, episodes=episodes, seed=seed).mean
    finally:
        env.close()
    return references


def _groups(entry: dict[str, Any]) -> list[str]:
    """The agent groups whose returns the entry's curves carry (``return/<group>``)."""
    first = next(iter(entry["centralized"].values()))[0]
    groups = [key.split("/", 1)[1] for key in first if key.startswith("return/")]
    return sorted(groups, key=lambda group: (group != "agent", group))  # "agent" keeps one colour


def plot_curves(results: dict[str, Any], path: Path) -> Path:
    """One panel per scenario: every centralized seed solid, the coded run(s) dashed, the random
    policy dotted. A scenario with one group plots the team's return; one with several (predators
    and prey, ...) plots each group's return in its own colour, since their sum hides who learns."""
    scenarios = list(results)
    columns = min(2, len(scenarios))
    rows = math.ceil(len(scenarios) / columns)
    with saved_figure(
        path, figsize=(5.5 * columns, 3.6 * rows), nrows=rows, ncols=columns, squeeze=False
    ) as (_, grid):
        for axes, scenario in zip(grid.flat, scenarios, strict=False):
            entry = results[scenario]
            groups = _groups(entry)
            series = [(f"return/{g}", g) for g in groups] if len(groups) > 1 else [("return", "")]
            randoms = entry.get("random_groups", {})
            for colour, (key, group) in enumerate(series):
                colour_name = f"C{colour}" if group else None
                for kind, style in (("centralized", "-"), ("coded", "--")):
                    for seed, curve in entry[kind].items():
                        label = (
                            f"{kind} seed {seed}" if kind == "centralized" else entry["coded_label"]
                        )
                        axes.plot(
                            [p["env_steps"] for p in curve],
                            [p[key] for p in curve],
                            style,
                            color=colour_name,
                            marker="o" if kind == "centralized" else "x",
                            markersize=3,
                            label=f"{group}: {label}" if group else label,
                        )
                if not group and entry.get("scripted") is not None:
                    axes.axhline(
                        entry["scripted"], color="black", linestyle="-.", label="scripted oracle"
                    )
                floor = randoms.get(group) if group else entry["random"]
                if floor is not None:
                    axes.axhline(
                        floor,
                        color=colour_name or "grey",
                        linestyle=":",
                        label=f"{group}: random policy" if group else "random policy",
                    )
            trained_on = entry.get("env_backend", "mpe")
            axes.set_title(
                f"{scenario.replace('_', ' ')}, M = {entry['agents']} "
                f"(trained on {trained_on}, evaluated on mpe)",
                fontsize=9,
            )
            axes.set_xlabel("env steps")
            axes.set_ylabel(
                "greedy evaluation return (per group)"
                if len(series) > 1
                else "greedy evaluation return (team)"
            )
            axes.legend(fontsize=6)
        for axes in list(grid.flat)[len(scenarios) :]:
            axes.axis("off")
    return path


def parity(
    scenarios: Sequence[str],
    *,
    iterations: int,
    eval_every: int,
    episodes: int,
    seeds: Sequence[int],
    agents: int | None,
    learners: int,
    stragglers: int,
    coded_seeds: int,
    options: dict[str, Any],
    env_backend: str = "mpe",
    num_envs: int = 1,
) -> dict[str, Any]:
    """Per scenario: centralized curves for ``seeds``, coded curves for the first ``coded_seeds``
    of them, the random return, and the largest gap between a coded curve and its seed's
    centralized one."""
    results: dict[str, Any] = {}
    for scenario in scenarios:
        entry: dict[str, Any] = {
            "agents": agents,
            "env_backend": env_backend,
            "num_envs": num_envs,
            "coded_label": f"coded (mds, N={learners}, k={stragglers})",
            "centralized": {},
            "coded": {},
        }
        for index, seed in enumerate(seeds):
            kinds = [False, True] if index < coded_seeds else [False]
            for coded in kinds:
                config = parity_config(
                    scenario,
                    coded=coded,
                    iterations=iterations,
                    agents=agents,
                    learners=learners,
                    stragglers=stragglers,
                    delay_s=0.25,
                    seed=seed,
                    options=options,
                    env_backend=env_backend,
                    num_envs=num_envs,
                )
                entry["agents"] = config.env.options.model_dump().get("agents", agents)
                with tempfile.TemporaryDirectory() as folder:
                    curve = evaluation_curve(
                        config, eval_every=eval_every, episodes=episodes, folder=Path(folder)
                    )
                entry["coded" if coded else "centralized"][seed] = curve
        entry.update(parity_references(scenario, agents, episodes, seeds[0]))
        gaps = [
            abs(a["return"] - b["return"])
            for seed, coded_curve in entry["coded"].items()
            for a, b in zip(coded_curve, entry["centralized"][seed], strict=True)
        ]
        entry["max_abs_difference"] = max(gaps, default=0.0)
        finals = [curve[-1]["return"] for curve in entry["centralized"].values()]
        entry["final_median"] = statistics.median(finals)
        results[scenario] = entry
    return results


@click.command()
@click.option(
    "--scenario",
    "scenarios",
    type=click.Choice(SCENARIOS),
    multiple=True,
    default=("cooperative_navigation",),
    show_default=True,
)
@click.option("--iterations", type=int, default=1500, show_default=True)
@click.option("--eval-every", type=int, default=150, show_default=True)
@click.option("--episodes", type=int, default=50, show_default=True)
@click.option("--seeds", type=int, multiple=True, default=(0,), show_default=True)
@click.option("--coded-seeds", type=int, default=1, show_default=True)
@click.option("--agents", type=int, default=3, show_default=True)
@click.option("--learners", type=int, default=5, show_default=True)
@click.option("--stragglers", type=int, default=1, show_default=True)
@click.option(
    "--env-backend",
    type=click.Choice(["mpe", "vmas"]),
    default="mpe",
    show_default=True,
    help="Train on this backend (vmas: --num-envs copies in one batch); evaluation is on mpe.",
)
@click.option(
    "--num-envs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Env copies (vmas); each iteration takes steps_per_iteration steps in every copy.",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    help="algorithm option, e.g. --set learning_starts=5000 (YAML value)",
)
@click.option("--plot", type=click.Path(path_type=Path), default=None)
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None)
@click.option(
    "--replot",
    "replot",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    multiple=True,
    help="Train nothing: draw --plot from these --json outputs (one figure, a panel per scenario).",
)
def main(
    scenarios: tuple[str, ...],
    iterations: int,
    eval_every: int,
    episodes: int,
    seeds: tuple[int, ...],
    coded_seeds: int,
    agents: int,
    learners: int,
    stragglers: int,
    env_backend: str,
    num_envs: int,
    sets: tuple[str, ...],
    plot: Path | None,
    json_path: Path | None,
    replot: tuple[Path, ...],
) -> None:
    """Train centralized and coded MADDPG and compare their greedy evaluation curves."""
    import torch
    import yaml

    if replot:
        if plot is None:
            raise click.UsageError("--replot draws a figure: give --plot PATH")
        merged: dict[str, Any] = {}
        for source in replot:
            try:
                saved = json.loads(source.read_text())
                if not all(isinstance(e, dict) and "centralized" in e for e in saved.values()):
                    raise ValueError
            except (ValueError, AttributeError) as exc:  # JSONDecodeError is a ValueError
                raise click.UsageError(
                    f"--replot {source}: not a --json output of this bench"
                ) from exc
            merged.update(saved)
        for scenario, entry in merged.items():
            if "random_groups" not in entry:  # written before the per-group floors were kept
                entry.update(parity_references(scenario, entry["agents"], episodes, seeds[0]))
        plot_curves(merged, plot)
        click.echo(f"wrote {plot} ({', '.join(merged)})")
        return

    # Evaluation steps tiny networks: one thread (the collector and the update set theirs).
    torch.set_num_threads(1)

    options = {}
    for item in sets:
        key, _, value = item.partition("=")
        options[key] = yaml.safe_load(value)
    results = parity(
        scenarios,
        iterations=iterations,
        eval_every=eval_every,
        episodes=episodes,
        seeds=seeds,
        agents=agents,
        learners=learners,
        stragglers=stragglers,
        coded_seeds=coded_seeds,
        options=options,
        env_backend=env_backend,
        num_envs=num_envs,
    )
    if plot is not None:
        plot_curves(results, plot)
    text = json.dumps(results)
    if json_path is not None:
        json_path.write_text(text)
    click.echo(text)


if __name__ == "__main__":
    main()
