"""A bound program's acting policy for given ``theta`` rows, whatever the algorithm: what
``marlplug evaluate``, periodic evaluation during training and ``marlplug render`` act with.

A program acts in one of two ways, each a :class:`typing.Protocol` (no algorithm is named here):

- :class:`ModuleActing` (PPO): a TorchRL ``policy`` module over the env's tensordict and
  ``load(theta)``, which writes the rows into that module's weights;
- :class:`FlatActing` (MADDPG, off-policy plugins): ``act(theta, obs)`` over the flat, zero-padded
  ``[E, M, O]`` observations of :class:`~marlplug.envs.flat.MultiAgentEnvAdapter`, plus
  ``env_scale``; :class:`FlatActorPolicy` turns it into a tensordict policy.

Both sample under TorchRL's ``RANDOM`` exploration type and act greedily otherwise (``DETERMINISTIC``,
or none set: tensordict's probabilistic modules default to their deterministic action).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase
from torchrl.envs.utils import ExplorationType, exploration_type

from marlplug.envs.flat import MultiAgentEnvAdapter


@runtime_checkable
class ModuleActing(Protocol):
    """A program that acts with a TorchRL module holding its weights (PPO)."""

    policy: Any

    def load(self, theta: torch.Tensor) -> None: ...


@runtime_checkable
class FlatActing(Protocol):
    """A program that acts on flat ``[E, M, O]`` observations from ``theta`` rows (MADDPG)."""

    def act(
        self,
        theta_all: torch.Tensor,
        obs: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        explore: bool = True,
    ) -> torch.Tensor: ...

    def env_scale(self, actions: torch.Tensor) -> torch.Tensor: ...


class FlatActorPolicy:
    """A :class:`FlatActing` program's actors as a tensordict policy for ``env``.

    Sampled under the ``RANDOM`` exploration type, from torch's global RNG (which
    :func:`marlplug.envs.evaluate` seeds per round and restores); greedy (``explore=False``) otherwise.

    Example:
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> program = MADDPG().bind(env)
        >>> policy = FlatActorPolicy(program, env, program.init_state(0)[0])
        >>> policy(env.reset())["agent", "action"].shape
        torch.Size([2])
    """

    def __init__(self, program: FlatActing, env: EnvBase, theta: torch.Tensor) -> None:
        self.program = program
        self.adapter = MultiAgentEnvAdapter(env)
        self.theta = theta

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        explore = exploration_type() == ExplorationType.RANDOM
        obs = self.adapter.observations(tensordict)
        masks: dict[str, Any] = {}
        if getattr(self.program, "reads_action_mask", False) and self.adapter.has_action_mask:
            masks["action_mask"] = self.adapter.action_masks(tensordict)  # the Q-learners
        actions = self.program.act(self.theta, obs, explore=explore, **masks)
        return self.adapter.write_actions(tensordict, self.program.env_scale(actions))


def acting_policy(program: object, env: EnvBase, theta: torch.Tensor) -> Any | None:
    """``program``'s policy acting with ``theta``'s rows in ``env``; ``None`` when it cannot act.

    A :class:`ModuleActing` program gets ``theta`` loaded into its module (in place) and returns
    that module, in eval mode; a :class:`FlatActing` one is wrapped in :class:`FlatActorPolicy`.

    Example:
        >>> from marlplug.algorithms.ppo import PPO
        >>> from marlplug.config import load_config
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> program = PPO().bind(env, load_config())
        >>> policy = acting_policy(program, env, program.init_state(0)[0])
        >>> policy is program.policy
        True
    """
    if isinstance(program, ModuleActing) and program.policy is not None:
        program.load(theta)
        if isinstance(program.policy, torch.nn.Module):
            program.policy.eval()
        return program.policy
    if isinstance(program, FlatActing):
        return FlatActorPolicy(program, env, theta)
    return None
