"""A Gymnasium multi-agent env (tuples of per-agent spaces, as LBF and RWARE have) as a
:class:`~marlplug.envs.JointEnv`, so :class:`~marlplug.envs.JointEnvWrapper` makes it one TorchRL
agent group; where the env says which actions are valid, :meth:`action_mask` passes that on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from marlplug.envs.joint import JointStepResult
from marlplug.errors import UserError

#: Reads the ``[agents, actions]`` valid-action booleans from the env's ``unwrapped`` object.
ActionMaskReader = Callable[[Any, int], np.ndarray]


class TupleAgentsEnv:
    """Per-agent lists in and out of a Gymnasium env whose spaces are ``Tuple``s, one entry per agent.

    Rewards may be one per agent or one for the team (then every agent gets it); ``terminated``
    and ``truncated`` are the episode's. Observations are flattened to vectors.

    Args:
        env: the Gymnasium env (``gymnasium.make(...)``).
        read_action_mask: reads valid actions from ``env.unwrapped``; ``None`` if it has none.

    Examples:
        >>> import gymnasium, lbforaging  # doctest: +SKIP
        >>> env = TupleAgentsEnv(gymnasium.make("Foraging-8x8-2p-2f-coop-v3"))  # doctest: +SKIP
        >>> env.num_agents, env.n_actions  # doctest: +SKIP
        (2, 6)
    """

    def __init__(self, env: Any, *, read_action_mask: ActionMaskReader | None = None) -> None:
        observation_spaces = getattr(env.observation_space, "spaces", None)
        action_spaces = getattr(env.action_space, "spaces", None)
        if not isinstance(observation_spaces, tuple) or not isinstance(action_spaces, tuple):
            raise UserError(
                f"{type(env.unwrapped).__name__}: expected Tuple observation and action spaces "
                f"(one entry per agent), got {env.observation_space} and {env.action_space}"
            )
        sizes = {int(getattr(space, "n", 0)) for space in action_spaces}
        if len(sizes) != 1 or 0 in sizes:
            raise UserError(
                f"{type(env.unwrapped).__name__}: every agent needs the same Discrete action "
                f"space, got {env.action_space}"
            )
        self.env = env
        self.num_agents = len(action_spaces)
        self.n_actions = sizes.pop()
        self.observation_dim = min(int(np.prod(space.shape)) for space in observation_spaces)
        self._read_action_mask = read_action_mask

    def reset(self, seed: int | None = None) -> list[torch.Tensor]:
        observations, _ = self.env.reset(seed=seed)
        return self._observations(observations)

    def step(self, actions: list[torch.Tensor]) -> JointStepResult:
        observations, rewards, terminated, truncated, _ = self.env.step(
            tuple(int(action) for action in actions)
        )
        per_agent = np.broadcast_to(np.asarray(rewards, dtype=np.float64), (self.num_agents,))
        return JointStepResult(
            rewards=[float(reward) for reward in per_agent],
            done=bool(np.all(terminated) or np.all(truncated)),
            observations=self._observations(observations),
            truncated=bool(np.all(truncated)) and not bool(np.all(terminated)),
        )

    def action_mask(self) -> torch.Tensor:
        """``[agents, actions]`` booleans from the env (all True when it gives none)."""
        if self._read_action_mask is None:
            return torch.ones(self.num_agents, self.n_actions, dtype=torch.bool)
        mask = self._read_action_mask(self.env.unwrapped, self.n_actions)
        return torch.as_tensor(np.asarray(mask, dtype=bool))

    @staticmethod
    def _observations(observations: Any) -> list[torch.Tensor]:
        return [torch.as_tensor(np.asarray(o, dtype=np.float32)).reshape(-1) for o in observations]


def lbf_action_mask(env: Any, n_actions: int) -> np.ndarray:
    """LBF's valid actions per player (``ForagingEnv._valid_actions``, what its
    ``get_valid_actions`` takes the product of) as ``[players, actions]`` booleans."""
    mask = np.zeros((len(env.players), n_actions), dtype=bool)
    for index, player in enumerate(env.players):
        for action in env._valid_actions[player]:
            mask[index, action.value] = True
    return mask


__all__ = ["ActionMaskReader", "TupleAgentsEnv", "lbf_action_mask"]
