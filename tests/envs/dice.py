"""A joint env whose episodes end at random, for tests of env copies that end apart."""

from __future__ import annotations

import numpy as np
import torch

from marlplug.envs.joint import JointEnvWrapper, JointStepResult


class Dice:
    """Two agents shown random numbers; an episode ends at random (so copies end apart), and the
    reward is the actions' sum. Seeded through ``reset(seed)``."""

    num_agents = 2

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> list[torch.Tensor]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        return self._observations()

    def step(self, actions: list[torch.Tensor]) -> JointStepResult:
        return JointStepResult(
            rewards=[float(sum(int(a) for a in actions))] * 2,
            done=bool(self.rng.random() < 0.2),
            observations=self._observations(),
            truncated=bool(self.rng.random() < 0.5),
        )

    def action_mask(self) -> torch.Tensor:
        mask = torch.as_tensor(self.rng.random((2, 3)) < 0.7)
        mask[:, 0] = True  # every agent has a valid action
        return mask

    def _observations(self) -> list[torch.Tensor]:
        return [torch.as_tensor(self.rng.random(4), dtype=torch.float32) for _ in range(2)]


def dice() -> JointEnvWrapper:
    return JointEnvWrapper(Dice(), n_actions=3, observation_dim=4, action_mask=True)
