"""``marlplug evaluate --policy random|scripted``: mean ± std return over N episodes, per group too.

What is evaluated is an :class:`EvaluationTarget` (an env, a policy and a description of both);
the reference policies make one with :func:`reference_target`. Evaluating a trained run
(``marlplug evaluate RUN_DIR|CHECKPOINT``) will be a second builder of the same target, from the
run's config and checkpoint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import click
from torchrl.envs import EnvBase

from marlplug.envs import EvaluationResult, make_env, reference_policy
from marlplug.envs import evaluate as evaluate_policy
from marlplug.envs.policies import REFERENCE_POLICIES, Policy


@dataclass(frozen=True)
class EvaluationTarget:
    """A policy and the env to evaluate it on."""

    env: EnvBase
    policy: Policy
    policy_name: str
    """What acts: ``"random"``, ``"scripted"`` (later: a checkpoint's path)."""
    scenario: str
    backend: str

    def describe(self) -> dict[str, Any]:
        """The report's header fields (``--json`` keys)."""
        return {
            "policy": self.policy_name,
            "env": self.scenario,
            "backend": self.backend,
            "agents": {group: len(names) for group, names in self.env.group_map.items()},
        }


def reference_target(
    policy: str, *, scenario: str, backend: str, agents: int | None
) -> EvaluationTarget:
    """The reference policy ``policy`` on ``scenario`` (``agents``: ``None`` keeps its default).

    Example:
        >>> target = reference_target("random", scenario="keep_away", backend="mpe", agents=None)
        >>> target.describe()["agents"]
        {'agent': 1, 'adversary': 1}
    """
    options: dict[str, Any] = {} if agents is None else {"agents": agents}
    env = make_env(scenario, backend=backend, **options)
    return EvaluationTarget(
        env=env,
        policy=reference_policy(policy, env, scenario=scenario),
        policy_name=policy,
        scenario=scenario,
        backend=backend,
    )


def format_report(header: dict[str, Any], result: EvaluationResult) -> str:
    """The human report: what ran, mean ± std of the team return, and each group's mean."""
    agents = ", ".join(f"{group}: {count}" for group, count in header["agents"].items())
    mode = "deterministic" if result.deterministic else "sampled"
    lines = [
        f"{header['policy']} policy on {header['env']} ({header['backend']}; {agents}): "
        f"{result.episodes} episodes, {mode} actions, evaluation seed {result.seed}",
        f"return (summed over agents): {result.mean:.2f} ± {result.std:.2f} (std over episodes)",
    ]
    lines += [f"  {group}: {mean:.2f}" for group, mean in result.group_means.items()]
    return "\n".join(lines)


@click.command()
@click.option(
    "--policy",
    type=click.Choice(list(REFERENCE_POLICIES)),
    required=True,
    help="Reference policy: uniform random actions, or the scenario's scripted oracle.",
)
@click.option(
    "--env",
    "scenario",
    default="cooperative_navigation",
    show_default=True,
    help="Scenario name (see `marlplug envs`).",
)
@click.option("--backend", default="mpe", show_default=True, help="Env backend: mpe, vmas, ...")
@click.option(
    "--agents",
    type=click.IntRange(min=1),
    default=None,
    help="Number of agents (default: the scenario's).",
)
@click.option("--episodes", type=click.IntRange(min=1), default=100, show_default=True)
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**32 - 1),
    default=0,
    show_default=True,
    help="Evaluation seed (the episodes differ from every training rollout of any seed).",
)
@click.option("--sample", is_flag=True, help="Sample actions instead of taking the most likely.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON for tools.")
def evaluate(
    policy: str,
    scenario: str,
    backend: str,
    agents: int | None,
    episodes: int,
    seed: int,
    sample: bool,
    as_json: bool,
) -> None:
    """Evaluate a reference policy: mean and std of the episode return, per group too."""
    target = reference_target(policy, scenario=scenario, backend=backend, agents=agents)
    result = evaluate_policy(
        target.env, target.policy, episodes=episodes, seed=seed, deterministic=not sample
    )
    header = target.describe()
    if as_json:
        click.echo(json.dumps({**header, **result.as_dict()}, indent=2))
    else:
        click.echo(format_report(header, result))
