"""What ``marlplug bench scaling`` changes in the packaged configs at each point.

Each point starts from one packaged config per algorithm (:data:`CONFIGS`); :func:`ppo_overrides`
and :func:`maddpg_overrides` are the bench's own ``KEY=VALUE`` changes, and :data:`BENCH_KEYS` the
keys those (and the sweeps) set, which a user's ``--set`` may not.
"""

from __future__ import annotations

import math
from importlib import resources
from typing import get_args

from marlplug.nn.critic_input import CriticInput

#: The packaged config every point of each algorithm starts from.
CONFIGS = {"ppo": "spread_vmas.yaml", "maddpg": "maddpg_spread.yaml"}
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


def maddpg_overrides(
    *, num_envs: int, updates: int, rollout_steps: int | None, minibatch: int
) -> list[str]:
    """``maddpg_spread.yaml``'s changes: steps per copy (``rollout_steps``, raised where needed)
    such that one iteration collects at least one minibatch, learning from the first iteration on,
    and a replay buffer that holds the whole run.

    Examples:
        >>> maddpg_overrides(num_envs=256, updates=4, rollout_steps=None, minibatch=1024)
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
    "algorithm.learning_starts": "none: maddpg learns from the first iteration here",
    "algorithm.buffer_size": "none: the buffer holds the whole run",
}


def config_path(algorithm: str) -> str:
    """The packaged config of ``algorithm`` (``ppo`` or ``maddpg``)."""
    return str(resources.files("marlplug.configs").joinpath(CONFIGS[algorithm]))
