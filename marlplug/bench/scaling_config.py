"""What ``marlplug bench scaling`` changes in the packaged configs at each point.

Each point starts from one packaged config per algorithm (:func:`config_path`) with
``algorithm.name`` set to it; :func:`ppo_overrides` (on-policy) and :func:`replay_overrides`
(replay-based) are the bench's own ``KEY=VALUE`` changes, and :data:`BENCH_KEYS` the keys those (and
the sweeps) set, which a user's ``--set`` may not.
"""

from __future__ import annotations

import math
from importlib import resources
from typing import get_args

from pydantic import BaseModel

from marlplug.nn.critic_input import CriticInput
from marlplug.plugins import get_component

#: The packaged config every point of an algorithm starts from, where it has its own. Any other
#: registered algorithm starts from its family's: :data:`REPLAY_CONFIG` when it learns from replay
#: (:func:`learns_from_replay`), else :data:`ON_POLICY_CONFIG`.
CONFIGS = {"ppo": "spread_vmas.yaml", "maddpg": "maddpg_spread.yaml"}
ON_POLICY_CONFIG = "spread_vmas.yaml"
REPLAY_CONFIG = "maddpg_spread.yaml"
#: The options a replay-based algorithm's schedule reads, which :func:`replay_overrides` sets
#: (:class:`~marlplug.algorithms.replay.ReplayOptions`), and by which
#: :func:`learns_from_replay` knows the family. Not ``updates_per_iteration``: the bench leaves it
#: at the config's (1, or a ``--set``), and a plugin's replay options without it (the example
#: plugin's ``linear_iql``) must still count as replay-based.
REPLAY_FIELDS = ("minibatch_size", "buffer_size", "steps_per_iteration", "learning_starts")
SCENARIO = "cooperative_navigation"
#: ``--critic`` choices: each critic input, alone and with parameter sharing.
SHARED = "+shared"
CRITICS: tuple[str, ...] = (
    *get_args(CriticInput),
    *(f"{c}{SHARED}" for c in get_args(CriticInput)),
)


def ppo_overrides(
    *, critic: str, rollout_steps: int | None, minibatch: int | None, threads: int
) -> list[str]:
    """``spread_vmas.yaml``'s changes: the critic (``+shared``: with parameter sharing), the
    rollout and minibatch (``None``: the config's) and the thread count.

    Examples:
        >>> ppo_overrides(critic="state", rollout_steps=5, minibatch=None, threads=1)
        ['algorithm.critic=state', 'train.torch_threads=1', 'train.rollout_steps=5']
        >>> ppo_overrides(critic="state+shared", rollout_steps=None, minibatch=None, threads=1)
        ['algorithm.critic=state', 'train.torch_threads=1', 'algorithm.share_params=true']
    """
    name, shared, _ = critic.partition(SHARED)
    overrides = [f"algorithm.critic={name}", f"train.torch_threads={threads}"]
    if shared:
        overrides.append("algorithm.share_params=true")
    if rollout_steps is not None:
        overrides.append(f"train.rollout_steps={rollout_steps}")
    if minibatch is not None:
        overrides.append(f"train.minibatch_size={minibatch}")
    return overrides


def learns_from_replay(options: type[BaseModel]) -> bool:
    """Whether an algorithm with these options learns from replay on its own schedule (they have
    every field of :data:`REPLAY_FIELDS`) rather than from PPO's rollouts.

    Examples:
        >>> from marlplug.algorithms.ppo import PPO
        >>> from marlplug.algorithms.q.options import QOptions
        >>> learns_from_replay(QOptions), learns_from_replay(PPO.Options)
        (True, False)
    """
    return all(field in options.model_fields for field in REPLAY_FIELDS)


def replay_overrides(
    *, num_envs: int, updates: int, rollout_steps: int | None, minibatch: int
) -> list[str]:
    """A replay-based algorithm's changes (MADDPG, IQL, SAC, ...): steps per copy (``rollout_steps``, raised where needed)
    such that one iteration collects at least one minibatch, learning from the first iteration on,
    and a replay buffer that holds the whole run.

    Examples:
        >>> replay_overrides(num_envs=256, updates=4, rollout_steps=None, minibatch=1024)
        ... # doctest: +NORMALIZE_WHITESPACE
        ['algorithm.minibatch_size=1024', 'algorithm.steps_per_iteration=4',
         'algorithm.learning_starts=1024', 'algorithm.buffer_size=4096']
    """
    steps = max(rollout_steps or 1, math.ceil(minibatch / num_envs))
    return [
        f"algorithm.minibatch_size={minibatch}",
        f"algorithm.steps_per_iteration={steps}",
        f"algorithm.learning_starts={steps * num_envs}",
        f"algorithm.buffer_size={updates * steps * num_envs}",
    ]


#: Config keys the bench sets at every point, and the option that chooses them instead of --set.
BENCH_KEYS = {
    "algorithm.name": "--algorithm",
    "env.agents": "--agents (or --base-agents)",
    "train.num_envs": "--num-envs (or --base-envs)",
    "train.updates": "--updates",
    "env.backend": "none: the bench trains on vmas",
    "algorithm.critic": "--critic",
    "algorithm.share_params": "--critic NAME+shared",
    "train.torch_threads": "--threads",
    "train.rollout_steps": "--rollout-steps",
    "train.minibatch_size": "--minibatch",
    "algorithm.minibatch_size": "--minibatch",
    "algorithm.steps_per_iteration": "--rollout-steps",
    "algorithm.learning_starts": "none: replay-based algorithms learn from the first iteration",
    "algorithm.buffer_size": "none: the buffer holds the whole run",
}


def config_path(algorithm: str) -> str:
    """The packaged config the points of the registered ``algorithm`` start from (see
    :data:`CONFIGS`).

    Examples:
        >>> [config_path(name).rsplit("/", 1)[1] for name in ("ppo", "qmix")]
        ['spread_vmas.yaml', 'maddpg_spread.yaml']
    """
    name = CONFIGS.get(algorithm)
    if name is None:
        options = get_component("algorithm", algorithm, field="--algorithm").Options
        name = REPLAY_CONFIG if learns_from_replay(options) else ON_POLICY_CONFIG
    return str(resources.files("marlplug.configs").joinpath(name))
