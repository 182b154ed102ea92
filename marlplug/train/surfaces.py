"""The seed's minimal surfaces for people who do not use TorchRL: JointEnv, JointStepResult, JointPolicy.

:class:`TorchRLJointEnv` adapts any TorchRL multi-agent env to ``reset(seed)`` / ``step(actions)``;
:class:`JointActorCritic` satisfies :class:`JointPolicy`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.envs import EnvBase


@dataclass
class JointStepResult:
    """Per-step result of a :class:`JointEnv`: one entry per agent, in the documented agent order."""

    rewards: list[float]
    done: bool
    observations: list[torch.Tensor]


@runtime_checkable
class JointEnv(Protocol):
    """The minimal joint-environment surface: per-agent observations in, per-agent actions out."""

    @property
    def num_agents(self) -> int: ...

    def reset(self, seed: int | None = None) -> list[torch.Tensor]: ...

    def step(self, actions: list[torch.Tensor]) -> JointStepResult: ...


@runtime_checkable
class JointPolicy(Protocol):
    """A policy that can act and exposes every agent's encoder features."""

    def encoder_features(self, observations: Mapping[str, torch.Tensor]) -> list[torch.Tensor]: ...


class TorchRLJointEnv:
    """A :class:`JointEnv` over a TorchRL multi-agent env (one env copy, agent groups as nested keys).

    Args:
        env: a TorchRL env with ``group_map`` (e.g. from :func:`marlplug.envs.make_env`).

    Examples:
        >>> from marlplug.envs import make_env
        >>> joint = TorchRLJointEnv(make_env("cooperative_navigation", agents=3, seed=0))
        >>> observations = joint.reset(seed=0)
        >>> len(observations), joint.num_agents
        (3, 3)
        >>> result = joint.step([torch.tensor(0)] * 3)
        >>> len(result.rewards), result.done
        (3, False)
    """

    def __init__(self, env: EnvBase) -> None:
        if env.batch_size.numel() != 1:
            raise ValueError("TorchRLJointEnv needs an env with one copy (num_envs=1)")
        self.env = env
        self.group_map: dict[str, list[str]] = dict(env.group_map)
        self._current: TensorDictBase | None = None

    @property
    def num_agents(self) -> int:
        return sum(len(names) for names in self.group_map.values())

    @property
    def agent_names(self) -> list[str]:
        return [name for names in self.group_map.values() for name in names]

    def _observations(self, td: TensorDictBase) -> list[torch.Tensor]:
        return [
            obs
            for group in self.group_map
            for obs in td.get((group, "observation"))
            .reshape(len(self.group_map[group]), -1)
            .unbind(0)
        ]

    def reset(self, seed: int | None = None) -> list[torch.Tensor]:
        """Reset (seeding first when ``seed`` is given) and return each agent's observation."""
        if seed is not None:
            self.env.set_seed(seed)
        self._current = self.env.reset()
        return self._observations(self._current)

    def step(self, actions: list[torch.Tensor]) -> JointStepResult:
        """Apply one action per agent (documented agent order) and return rewards, done, observations."""
        if self._current is None:
            self.reset()
        assert self._current is not None
        td = self._current.clone()
        position = 0
        for group, names in self.group_map.items():
            group_actions = torch.stack(
                [torch.as_tensor(a) for a in actions[position : position + len(names)]]
            )
            position += len(names)
            spec = self.env.full_action_spec[group, "action"]
            td.set((group, "action"), group_actions.reshape(spec.shape).to(spec.dtype))
        stepped = self.env.step(td)
        following = stepped.get("next")
        rewards = [
            float(r)
            for group in self.group_map
            for r in following.get((group, "reward")).reshape(-1)
        ]
        done = bool(following.get("done").any())
        self._current = following.exclude(*[(g, "reward") for g in self.group_map])
        return JointStepResult(
            rewards=rewards, done=done, observations=self._observations(following)
        )


def joint_policy_features(
    policy: JointPolicy, td: TensorDict, groups: list[str]
) -> list[torch.Tensor]:
    """Encoder features of every agent for the observations in ``td``."""
    return policy.encoder_features({group: td.get((group, "observation")) for group in groups})
