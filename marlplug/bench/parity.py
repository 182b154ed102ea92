"""Learning parity, like the paper's reward figure: coded training against centralized training,
same seed, both by ``marlplug train``'s orchestrator, both evaluated with deterministic actions.

A run is cut into chunks: after each chunk of ``--eval-every`` iterations the orchestrator stops
(writing its checkpoint) and the run's actors are evaluated on fixed evaluation episodes
(:func:`marlplug.envs.evaluate.evaluate`, greedy actions); the next chunk resumes the run, which is
bit-identical to a run never stopped. So a curve is the evaluation return against env steps, not
the noisy return of the exploring training episodes.

``python -m marlplug.bench.parity --scenario cooperative_navigation --iterations 1500
--eval-every 150 --seeds 0 1 2 --plot docs/images/coding_parity.png`` trains, per scenario,
centralized MADDPG for every seed and coded MADDPG (``mds`` on N learners, k stragglers, simulated
clock) for the first seed, and plots every curve with the random policy's return as a reference.
``--config FILE`` trains that config instead (any algorithm with an acting policy, e.g.
``marlplug/configs/paper_predator_prey.yaml``, or a PPO config given a ``coding:`` section with
``--set coding.scheme=mds ...``): the coded runs use its ``coding:`` section, the centralized
runs drop it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from marlplug.algorithms.acting import acting_policy
from marlplug.bench.parity_config import (
    CONFIG_REPLACES,
    SCENARIOS,
    env_options,
    flags_setup,
    parity_config,
)
from marlplug.bench.parity_results import merge_entry, plot_curves
from marlplug.config import MarlplugConfig, apply_override, load_config, read_config_file
from marlplug.envs import make_env
from marlplug.envs.evaluate import evaluate
from marlplug.envs.policies import (
    SCRIPTED_SCENARIOS,
    random_group_policy,
    random_policy,
    scripted_policy,
)
from marlplug.errors import UserError
from marlplug.plugins import get_component
from marlplug.train.orchestrator import run

#: The runs' own evaluation settings, which the bench replaces by its own evaluation: overriding
#: one would change nothing, so ``--set`` refuses it and names what does.
EVALUATED_BY_THE_BENCH = {
    "train.eval_backend": "the bench evaluates every run on mpe, the paper's env, whatever trains",
    "train.eval_every": "the bench evaluates the runs itself; use --eval-every",
    "train.eval_episodes": "the bench evaluates the runs itself; use --episodes",
}


def evaluation_curve(
    config: MarlplugConfig, *, eval_every: int, episodes: int, folder: Path
) -> list[dict[str, float]]:
    """Train ``config`` for ``config.train.updates`` iterations in chunks of ``eval_every``;
    after each chunk (and before the first) evaluate the actors on ``episodes`` greedy episodes of
    the mpe env (the paper's, whichever backend trained them: the specs are the same).

    Returns:
        One point per evaluation: ``iteration``, ``env_steps``, ``return`` (team, mean over the
        episodes) and the mean return of each agent group (``return/<group>``); with several
        groups, each group's mean return when it acts uniformly at random against the others'
        trained agents (``random_vs_trained/<group>``, :func:`random_group_policy`), the
        reference a group's trained return must beat once its opponents learn.
    """
    env = make_env(
        config.env.name,
        backend="mpe",
        seed=0,
        global_state=config.algorithm.uses_global_state,  # e.g. PPO's critic: state
        **config.env.options.model_dump(),
    )
    algorithm = get_component("algorithm", config.algorithm.name, field="algorithm.name")(
        **config.algorithm.options.model_dump()
    )
    program = algorithm.bind(env, config)
    run_dir = folder / "run"
    groups = list(env.group_map)
    points: list[dict[str, float]] = []

    def point(theta: Any, iteration: int, env_steps: int) -> None:
        policy = acting_policy(program, env, theta)
        if policy is None:
            raise UserError(f"algorithm.name: '{config.algorithm.name}' has no acting policy")
        result = evaluate(env, policy, episodes=episodes, seed=config.seed)
        entry = {"iteration": iteration, "env_steps": env_steps, "return": result.mean}
        entry.update({f"return/{g}": v for g, v in result.group_means.items()})
        if len(groups) > 1:  # each side at random against the other's trained agents
            for group in groups:
                mixed = random_group_policy(policy, env, group)
                against = evaluate(env, mixed, episodes=episodes, seed=config.seed)
                entry[f"random_vs_trained/{group}"] = against.group_means[group]
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
    scenario: str, env_opts: dict[str, Any], episodes: int, seed: int
) -> dict[str, Any]:
    """The references the curves are read against, on mpe with ``env_opts``: the uniform random
    policy's mean team return (``random``) and mean return per group (``random_groups``), and where
    the scenario has a scripted oracle (cooperative navigation) its mean team return (``scripted``)."""
    env = make_env(scenario, seed=0, **env_opts)
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


def parity(
    setups: Mapping[str, Mapping[str, Any]],
    *,
    eval_every: int,
    episodes: int,
    seeds: Sequence[int],
    coded_seeds: int,
) -> dict[str, Any]:
    """Per scenario (``setups``: its config as a dict, :func:`flags_setup` or a config file's):
    centralized curves for ``seeds``, coded curves for the first ``coded_seeds`` of them, the
    random return, and the largest gap between a coded curve and its seed's centralized one."""
    results: dict[str, Any] = {}
    for scenario, setup in setups.items():
        first = parity_config(setup, coded=coded_seeds > 0, seed=seeds[0])
        env = first.env.options.model_dump()
        entry: dict[str, Any] = {
            "agents": env.get("agents"),
            "env_options": env,
            "env_backend": first.env.backend,
            "num_envs": first.train.num_envs,
            "coded_label": coded_label(first) if first.coding is not None else "",
            # What trained the curves, so that a saved result says how to reproduce it.
            "algorithm": {
                "name": first.algorithm.name,
                **first.algorithm.options.model_dump(mode="json"),
            },
            "updates": first.train.updates,
            "centralized": {},
            "coded": {},
        }
        for index, seed in enumerate(seeds):
            kinds = [False, True] if index < coded_seeds else [False]
            for coded in kinds:
                config = parity_config(setup, coded=coded, seed=seed)
                with tempfile.TemporaryDirectory() as folder:
                    curve = evaluation_curve(
                        config, eval_every=eval_every, episodes=episodes, folder=Path(folder)
                    )
                entry["coded" if coded else "centralized"][seed] = curve
        entry.update(parity_references(scenario, env, episodes, seeds[0]))
        merge_entry(results, scenario, entry)
    return results


def coded_label(config: MarlplugConfig) -> str:
    """The coded curves' legend: the code, N, k and t_s of ``config``'s ``coding:`` section."""
    coding = config.coding
    assert coding is not None
    stragglers = coding.stragglers
    return (
        f"coded ({coding.scheme.name}, N={coding.learners}, k={stragglers.count}, "
        f"t_s={stragglers.delay_s:g} s)"
    )


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
@click.option(
    "--adversaries",
    type=click.IntRange(min=1),
    default=None,
    help="K adversaries in predator-prey and keep-away (the paper: 4 at M = 8); default: the "
    "scenario's. Physical deception always has one.",
)
@click.option("--learners", type=int, default=5, show_default=True)
@click.option("--stragglers", type=int, default=1, show_default=True)
@click.option(
    "--delay-s",
    type=click.FloatRange(min=0.0),
    default=0.25,
    show_default=True,
    help="A straggler's delay t_s on the simulated clock (the paper: 0.25 s in cooperative "
    "navigation, 1 s in predator-prey and physical deception, 1.5 s in keep-away).",
)
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
    help="An algorithm option, e.g. --set learning_starts=5000, or any config path, e.g. --set "
    "coding.scheme=mds (YAML values; repeatable).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Train this config (e.g. marlplug/configs/paper_predator_prey.yaml): its scenario, env, "
    "algorithm and train settings, its coding: section for the coded runs. Replaces --scenario, "
    "--agents, --adversaries, --iterations, --learners, --stragglers, --delay-s, --env-backend "
    "and --num-envs; --set still overrides algorithm options.",
)
@click.option("--plot", type=click.Path(path_type=Path), default=None)
@click.option(
    "--json",
    "json_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the results here (with --replot: the merged results).",
)
@click.option(
    "--replot",
    "replot",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    multiple=True,
    help="Train nothing: draw --plot from these --json outputs (one figure, a panel per scenario; "
    "the seeds of one scenario run in separate invocations are drawn together).",
)
def main(
    scenarios: tuple[str, ...],
    iterations: int,
    eval_every: int,
    episodes: int,
    seeds: tuple[int, ...],
    coded_seeds: int,
    agents: int,
    adversaries: int | None,
    learners: int,
    stragglers: int,
    delay_s: float,
    env_backend: str,
    num_envs: int,
    sets: tuple[str, ...],
    plot: Path | None,
    json_path: Path | None,
    replot: tuple[Path, ...],
    config_path: Path | None,
) -> None:
    """Train centralized and coded runs (MADDPG, or --config's algorithm) and compare their greedy
    evaluation curves."""
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
            for scenario, entry in saved.items():
                merge_entry(merged, scenario, entry)
        for scenario, entry in merged.items():
            if "random_groups" not in entry:  # written before the per-group floors were kept
                opts = entry.get("env_options", {"agents": entry["agents"]})
                entry.update(parity_references(scenario, opts, episodes, seeds[0]))
        plot_curves(merged, plot)
        click.echo(f"wrote {plot} ({', '.join(merged)})")
        if json_path is not None:
            json_path.write_text(json.dumps(merged))
            click.echo(f"wrote {json_path} (the merged results)")
        return

    # Evaluation steps tiny networks: one thread (the collector and the update set theirs).
    torch.set_num_threads(1)

    options, overrides = {}, []
    for item in sets:
        key, _, value = item.partition("=")
        if key in EVALUATED_BY_THE_BENCH:
            raise click.UsageError(f"--set {key}: {EVALUATED_BY_THE_BENCH[key]}")
        if "." in key:  # a config path, as marlplug train --set takes it
            overrides.append(item)
        else:
            options[key] = yaml.safe_load(value)
    setups: dict[str, dict[str, Any]] = {}
    if config_path is not None:
        context = click.get_current_context()
        given = [
            param.opts[0]
            for param in context.command.params
            if param.name in CONFIG_REPLACES
            and context.get_parameter_source(param.name) != click.core.ParameterSource.DEFAULT
        ]
        if given:
            raise click.UsageError(f"--config gives the runs' settings: drop {', '.join(given)}")
        try:
            setup = read_config_file(config_path)
            setup["algorithm"] = {**setup.get("algorithm", {}), **options}
            setups[load_config(data=setup).env.name] = setup
        except UserError as exc:
            raise click.UsageError(f"--config {config_path}: {exc}") from exc
    else:
        for scenario in scenarios:
            setups[scenario] = flags_setup(
                scenario,
                iterations=iterations,
                env=env_options(scenario, agents, adversaries),
                learners=learners,
                stragglers=stragglers,
                delay_s=delay_s,
                options=options,
                env_backend=env_backend,
                num_envs=num_envs,
            )
    for setup in setups.values():  # every run's config is valid before the first one trains
        try:
            for item in overrides:
                apply_override(setup, item)
            parity_config(setup, coded=coded_seeds > 0, seed=seeds[0])
        except UserError as exc:
            where = f"--config {config_path}" if config_path and not overrides else "--set"
            raise click.UsageError(f"{where}: {exc}") from exc
    results = parity(
        setups, eval_every=eval_every, episodes=episodes, seeds=seeds, coded_seeds=coded_seeds
    )
    if plot is not None:
        plot_curves(results, plot)
    text = json.dumps(results)
    if json_path is not None:
        json_path.write_text(text)
    click.echo(text)


if __name__ == "__main__":
    main()
