"""``marlplug evaluate RUN_DIR|CHECKPOINT`` and ``marlplug evaluate --policy random|scripted|nearest``: mean ±
std return over N episodes, per group too, and the oracle-normalized score where there is one.

What is evaluated is an :class:`~marlplug.cli.evaluation_targets.EvaluationTarget` (an env, a
policy and a description of both, :mod:`marlplug.cli.evaluation_targets`); this module runs its
episodes, reports them and draws one as a GIF.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from tensordict import TensorDictBase
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marlplug.cli.evaluation_targets import (
    RUN_ARGUMENT,
    EvaluationTarget,
    reference_target,
    run_target,
    with_opponent,
    with_random_group,
)
from marlplug.envs import EvaluationResult, make_env, reference_policy
from marlplug.envs import evaluate as evaluate_policy
from marlplug.envs.evaluate import (
    DEFAULT_EVALUATION_SEED,
    EVALUATION_SALT,
    ReferenceReturns,
    reference_returns,
)
from marlplug.envs.policies import REFERENCE_POLICIES, random_group_policy
from marlplug.errors import UserError
from marlplug.runs.checkpoint import load_policy
from marlplug.seeding import derive_seed
from marlplug.train.threads import set_torch_threads


def write_gif(
    target: EvaluationTarget,
    out: Path,
    *,
    seed: int,
    deterministic: bool,
    random_group: str | None = None,
) -> str:
    """Render one episode of ``target`` (seeded like the first evaluation episode) to ``out``;
    returns what was written. Drawn with the mpe backend, as ``marlplug render`` does;
    ``random_group``'s agents act at random (:func:`with_random_group`)."""
    from marlplug.cli.render import save_gif  # imageio: only when a GIF is asked for

    episode_seed = derive_seed(seed, EVALUATION_SALT, 0)
    env = make_env(target.scenario, backend="mpe", seed=episode_seed, **target.env_options)
    if target.config is not None:
        policy = load_policy(Path(target.policy_name), env, target.config, option=RUN_ARGUMENT)
    else:
        policy = reference_policy(target.policy_name, env, scenario=target.scenario)
    if random_group is not None:
        policy = random_group_policy(policy, env, random_group)
    exploration = ExplorationType.DETERMINISTIC if deterministic else ExplorationType.RANDOM

    def act(tensordict: TensorDictBase) -> TensorDictBase:
        with set_exploration_type(exploration):
            return policy(tensordict)

    frames = save_gif(env, out, policy=act)
    return f"wrote {out} ({frames} frames: one episode, drawn with the mpe backend)"


def format_report(
    header: dict[str, Any],
    result: EvaluationResult,
    *,
    label: str | None = None,
    references: ReferenceReturns | None = None,
) -> str:
    """The human report: what ran, mean ± std of the team return, each group's mean and, with
    ``references``, the oracle-normalized score."""
    agents = ", ".join(f"{group}: {count}" for group, count in header["agents"].items())
    mode = "deterministic" if result.deterministic else "sampled"
    label = label or f"{header['policy']} policy"
    lines = [
        f"{label} on {header['env']} ({header['backend']}; {agents}): "
        f"{result.episodes} episodes, {mode} actions, evaluation seed {result.seed}",
        f"return (summed over agents): {result.mean:.2f} ± {result.std:.2f} (std over episodes)",
    ]
    lines += [f"  {group}: {mean:.2f}" for group, mean in result.group_means.items()]
    if result.group_survivors:  # agents die (MAgent2 battle): who won
        alive = ", ".join(
            f"{group} {sum(counts) / len(counts):.1f}"
            for group, counts in result.group_survivors.items()
        )
        wins = ", ".join(f"{group} {rate:.0%}" for group, rate in result.win_rates.items())
        lines.append(f"agents alive at the end (mean): {alive}")
        lines.append(f"wins (more agents alive at the end than the other groups): {wins}")
    if references is not None:
        lines.append(
            f"oracle-normalized score: {references.score(result.mean):.3f} (random "
            f"{references.random:.2f}, scripted {references.scripted:.2f} on the same episodes)"
        )
    return "\n".join(lines)


@click.command()
@click.argument(
    "run",
    metavar="[RUN_DIR|CHECKPOINT]",
    required=False,
    type=click.Path(path_type=Path),
)
@click.option(
    "--policy",
    type=click.Choice(list(REFERENCE_POLICIES)),
    default=None,
    help="Evaluate a reference policy instead of a run: uniform random actions, the scenario's "
    "scripted oracle, or (cooperative navigation) every agent heading for its own nearest "
    "landmark, uncoordinated.",
)
@click.option(
    "--env",
    "scenario",
    default=None,
    help="Scenario name (see `marlplug envs`; default: the run's, or cooperative_navigation).",
)
@click.option(
    "--backend",
    default=None,
    help="Env backend: mpe, vmas, ... (default: the run's, or mpe). A run trained on one backend "
    "can be evaluated on another of the same scenario.",
)
@click.option(
    "--agents",
    type=click.IntRange(min=1),
    default=None,
    help="Number of agents (default: the run's, or the scenario's).",
)
@click.option("--episodes", type=click.IntRange(min=1), default=100, show_default=True)
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**32 - 1),
    default=DEFAULT_EVALUATION_SEED,
    show_default=True,
    help="Evaluation seed (the episodes differ from every training rollout of any seed).",
)
@click.option("--sample", is_flag=True, help="Sample actions instead of taking the most likely.")
@click.option(
    "--random-group",
    metavar="GROUP",
    default=None,
    help="This group's agents act uniformly at random, the others as the policy says: a trained "
    "side against a random opponent, or a group's own random reference against the trained "
    "others (competitive scenarios, e.g. --random-group adversary).",
)
@click.option(
    "--opponent",
    metavar="RUN_DIR|CHECKPOINT",
    default=None,
    type=click.Path(path_type=Path),
    help="With --opponent-group: that group's agents act as this run or checkpoint says, e.g. "
    "an earlier checkpoint of the same run, kept by train.keep_checkpoint_every (self-play: "
    "--opponent RUN_DIR/checkpoints/update-000160.pt --opponent-group blue).",
)
@click.option(
    "--opponent-group",
    metavar="GROUP",
    default=None,
    help="The group that acts as --opponent says.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON for tools.")
@click.option(
    "--gif",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write a GIF of one episode (the first evaluation episode's seed, mpe backend).",
)
def evaluate(
    run: Path | None,
    policy: str | None,
    scenario: str | None,
    backend: str | None,
    agents: int | None,
    episodes: int,
    seed: int,
    sample: bool,
    random_group: str | None,
    opponent: Path | None,
    opponent_group: str | None,
    as_json: bool,
    gif: Path | None,
) -> None:
    """Evaluate a trained run or a reference policy: mean and std of the episode return, per group.

    RUN_DIR is a run folder (its latest checkpoint is evaluated) and CHECKPOINT a checkpoint file;
    --policy evaluates a reference policy instead. Where the scenario has a scripted policy, a run's
    return (and the nearest policy's) is also stated as the oracle-normalized score
    (R - random) / (scripted - random).
    """
    if (run is None) == (policy is None):
        raise UserError(
            f"evaluate: give a run folder or checkpoint ({RUN_ARGUMENT}) or --policy "
            f"{'|'.join(REFERENCE_POLICIES)}, {'not both' if run is not None else 'one of them'}"
        )
    if run is not None:
        target = run_target(run, scenario=scenario, backend=backend, agents=agents)
    else:
        assert policy is not None
        target = reference_target(
            policy,
            scenario=scenario or "cooperative_navigation",
            backend=backend or "mpe",
            agents=agents,
        )
    if (opponent is None) != (opponent_group is None):
        raise UserError(
            "evaluate: --opponent and --opponent-group go together (the checkpoint and the "
            "group that acts as it says)"
        )
    if opponent is not None and opponent_group is not None:
        target = with_opponent(target, opponent, opponent_group)
    if random_group is not None:
        target = with_random_group(target, random_group)
    # The run's own setting (auto: the CPUs free now); a policy without a run on one thread.
    set_torch_threads(target.config.train.torch_threads if target.config is not None else 1)
    if gif is not None:  # checked before the episodes run: an unwritable path fails at once
        from marlplug.cli.render import check_writable

        check_writable(gif, option="--gif")
    result = evaluate_policy(
        target.env, target.policy, episodes=episodes, seed=seed, deterministic=not sample
    )
    # Every policy is scored but the two references that define the score.
    scored = policy not in ("random", "scripted")
    references = (
        reference_returns(target.env, target.scenario, episodes=episodes, seed=seed)
        if scored
        else None
    )
    header = target.describe()
    if as_json:
        out = {**header, **result.as_dict()}
        if scored:
            out["references"] = None if references is None else asdict(references)
            out["score"] = None if references is None else references.score(result.mean)
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(format_report(header, result, label=target.label, references=references))
    if gif is not None:
        message = write_gif(
            target, gif, seed=seed, deterministic=not sample, random_group=random_group
        )
        click.echo(message, err=as_json)
