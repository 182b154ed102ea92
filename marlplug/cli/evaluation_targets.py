"""What ``marlplug evaluate`` evaluates: an :class:`EvaluationTarget`, a policy and the env it acts in.

:func:`reference_target` makes one for a reference policy, :func:`run_target` for a trained run
(from the config stored in its checkpoint and the checkpoint's ``theta`` rows,
:func:`marlplug.runs.checkpoint.load_policy`: PPO, MADDPG and any algorithm that can act);
:func:`with_random_group` and :func:`with_opponent` change what one group of agents does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchrl.envs import EnvBase

from marlplug.config import MarlplugConfig
from marlplug.envs import make_env, reference_policy
from marlplug.envs.evaluate import evaluation_env
from marlplug.envs.policies import Policy, opponent_group_policy, random_group_policy
from marlplug.runs.checkpoint import load_policy
from marlplug.runs.trained_run import TrainedRun

#: How errors about ``marlplug evaluate``'s positional argument name it.
RUN_ARGUMENT = "RUN_DIR|CHECKPOINT"


@dataclass(frozen=True)
class EvaluationTarget:
    """A policy and the env to evaluate it on."""

    env: EnvBase
    policy: Policy
    policy_name: str
    """What acts: ``"random"``, ``"scripted"`` or a checkpoint's path."""
    scenario: str
    backend: str
    label: str = ""
    """How the report's first line names the policy (default: ``"<policy_name> policy"``)."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """Further header fields (a run's algorithm, updates, frames)."""
    config: MarlplugConfig | None = None
    """A trained run's config (``None`` for a reference policy)."""
    env_options: Mapping[str, Any] = field(default_factory=dict)
    """The scenario options ``env`` was built with (to build it again, e.g. for ``--gif``)."""

    def describe(self) -> dict[str, Any]:
        """The report's header fields (``--json`` keys)."""
        return {
            "policy": self.policy_name,
            **self.details,
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
        env_options=options,
    )


def run_target(
    path: Path, *, scenario: str | None, backend: str | None, agents: int | None
) -> EvaluationTarget:
    """A trained run's policy on its env: ``path`` is a run folder (its latest checkpoint) or a
    checkpoint file (:class:`~marlplug.runs.trained_run.TrainedRun`); ``scenario``, ``backend`` and ``agents`` change the env (``None``: the run's).

    The env steps the run's ``train.eval_envs`` copies at once, on its own scenario or another.
    Evaluating on another backend of the same scenario (train on ``vmas``, evaluate on ``mpe``)
    works where both give the agents the same observations; a scenario or agent count the networks
    were not built for is refused in one line.

    Raises:
        UserError: see :meth:`TrainedRun.find`; its networks do not fit the requested env; the
            backend is unknown.
    """
    run = TrainedRun.find(path, argument=RUN_ARGUMENT)
    config, checkpoint = run.config, run.checkpoint
    backend = backend or config.env.backend
    options: dict[str, Any] = {} if agents is None else {"agents": agents}
    if scenario is None or scenario == config.env.name:
        scenario = config.env.name
        env = evaluation_env(config, backend=backend, num_envs=config.train.eval_envs, **options)
        options = {**config.env.options.model_dump(), **options}
    else:  # another scenario, with its default options: load_policy says whether the sizes fit
        global_state = config.algorithm.uses_global_state
        env = make_env(
            scenario,
            backend=backend,
            num_envs=config.train.eval_envs,
            global_state=global_state,
            **options,
        )
    policy = load_policy(checkpoint, env, config, option=RUN_ARGUMENT)
    updates, frames = run.updates, run.frames
    trained = f"trained on {config.env.backend}, {updates} updates, {frames} frames"
    return EvaluationTarget(
        env=env,
        policy=policy,
        policy_name=str(checkpoint),
        scenario=scenario,
        backend=backend,
        label=f"{config.algorithm.name} policy of {checkpoint} ({trained})",
        details={
            "algorithm": config.algorithm.name,
            "trained_backend": config.env.backend,
            "updates": updates,
            "frames": frames,
        },
        config=config,
        env_options=options,
    )


def with_random_group(target: EvaluationTarget, group: str) -> EvaluationTarget:
    """``target`` with ``group``'s agents acting uniformly at random
    (:func:`~marlplug.envs.policies.random_group_policy`).

    Example:
        >>> target = reference_target("random", scenario="keep_away", backend="mpe", agents=None)
        >>> with_random_group(target, "adversary").describe()["random_group"]
        'adversary'
    """
    label = target.label or f"{target.policy_name} policy"
    return replace(
        target,
        policy=random_group_policy(target.policy, target.env, group),
        label=f"{label}, '{group}' acting at random",
        details={**target.details, "random_group": group},
    )


def with_opponent(target: EvaluationTarget, opponent: Path, group: str) -> EvaluationTarget:
    """``target`` with ``group``'s agents acting as the trained run or checkpoint ``opponent``
    says (:func:`~marlplug.envs.policies.opponent_group_policy`): a run against an earlier
    checkpoint of itself. The opponent's networks must fit ``target``'s env (one line if not)."""
    run = TrainedRun.find(opponent, argument="--opponent")
    theirs = load_policy(run.checkpoint, target.env, run.config, option="--opponent")
    label = target.label or f"{target.policy_name} policy"
    return replace(
        target,
        policy=opponent_group_policy(target.policy, theirs, target.env, group),
        label=f"{label}, '{group}' acting as {run.checkpoint} ({run.updates} updates)",
        details={
            **target.details,
            "opponent": str(run.checkpoint),
            "opponent_group": group,
            "opponent_updates": run.updates,
        },
    )
