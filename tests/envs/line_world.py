"""A tiny pursuit task on a line, written as a plain :class:`marlplug.envs.JointEnv` (no TorchRL).

Pursuers and one prey sit on the cells ``0 .. size-1``. Each step every pursuer moves left, stays or
moves right (actions 0, 1, 2), then the prey takes a random step. A pursuer sees its own position and
the prey's offset from it, and is rewarded by how many cells closer to the prey its move took it
(+1, 0 or -1): a random policy earns about -0.1 per step, a chaser about +0.5, and PPO learns to
chase in a few updates. Episodes are cut after ``episode_length`` steps (a time limit). With
``continuous=True`` an action is a 1-vector in [-1, 1], rounded to the nearest move.
"""

from __future__ import annotations

from typing import Any

import torch
from torchrl.envs import EnvBase

from marlplug.envs import EnvScenario, JointEnvWrapper, JointStepResult
from marlplug.errors import ConfigError


class LinePursuit:
    """Pursuers chase a randomly walking prey along a line of ``size`` cells."""

    def __init__(
        self,
        *,
        num_agents: int = 2,
        size: int = 9,
        episode_length: int = 12,
        continuous: bool = False,
    ) -> None:
        self._num_agents = num_agents
        self.continuous = continuous
        self.size = size
        self.episode_length = episode_length
        self.generator = torch.Generator().manual_seed(0)
        self.positions = torch.zeros(num_agents, dtype=torch.long)
        self.prey = torch.tensor(0)
        self.steps = 0

    @property
    def num_agents(self) -> int:
        return self._num_agents

    def _observations(self) -> list[torch.Tensor]:
        offsets = (self.prey - self.positions).float() / self.size
        return list(torch.stack([self.positions.float() / self.size, offsets], dim=-1).unbind(0))

    def reset(self, seed: int | None = None) -> list[torch.Tensor]:
        if seed is not None:
            self.generator.manual_seed(seed)
        self.positions = torch.randint(self.size, (self._num_agents,), generator=self.generator)
        self.prey = torch.randint(self.size, (), generator=self.generator)
        self.steps = 0
        return self._observations()

    def step(self, actions: list[torch.Tensor]) -> JointStepResult:
        chosen = torch.stack([torch.as_tensor(a).reshape(()) for a in actions])
        moves = chosen.round().long() if self.continuous else chosen.long() - 1
        distance = (self.prey - self.positions).abs()
        self.positions = (self.positions + moves).clamp(0, self.size - 1)
        closer = distance - (self.prey - self.positions).abs()
        prey_move = torch.randint(-1, 2, (), generator=self.generator)
        self.prey = (self.prey + prey_move).clamp(0, self.size - 1)
        self.steps += 1
        done = self.steps >= self.episode_length
        return JointStepResult(
            rewards=closer.float().tolist(),
            done=done,
            observations=self._observations(),
            truncated=done,
        )


class LinePursuitScenario(EnvScenario):
    """:class:`LinePursuit` as a scenario, so a config can name it (``env: {name: line_pursuit,
    backend: joint}``); one copy only."""

    scenario = "line_pursuit"
    backend = "joint"
    summary = "pursuers chase a randomly walking prey along a line (a JointEnv)"

    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        if num_envs != 1:
            raise ConfigError(f"train.num_envs: line_pursuit runs one copy, got {num_envs}")
        pursuit = LinePursuit(
            num_agents=self.options.agents,
            episode_length=self.options.max_steps,
            continuous=self.options.continuous_actions,
        )
        actions: dict[str, Any] = (
            {"action_low": [-1.0], "action_high": [1.0]}
            if self.options.continuous_actions
            else {"n_actions": 3}
        )
        env = JointEnvWrapper(pursuit, **actions)
        if seed is not None:
            env.set_seed(seed)
        return env
