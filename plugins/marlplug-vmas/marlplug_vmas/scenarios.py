"""The four scenarios as VMAS scenarios: same agents, observations and rewards as the mpe backend.

Each class mirrors its mpe counterpart in ``marlplug.envs.mpe`` term for term, batched over
environments (every tensor has a leading ``[batch]`` dim).
"""

from __future__ import annotations

from typing import Any

import torch
from vmas.simulator.core import Agent, Landmark, World
from vmas.simulator.scenario import BaseScenario

from marlplug_vmas.physics import distance, mpe_agent, mpe_landmark, mpe_world, uniform_positions

BLUE = (0.35, 0.35, 0.85)
RED = (0.85, 0.35, 0.35)
GREEN = (0.35, 0.85, 0.35)
GREY = (0.25, 0.25, 0.25)
TARGET_GREEN = (0.15, 0.65, 0.15)


class _MpeLikeScenario(BaseScenario):
    """Shared resets and helpers; ``place`` puts entities at rest for scripted situations."""

    world: World
    has_target = False

    def _reset_entities(self, env_index: int | None, landmark_range: float = 1.0) -> None:
        for agent in self.world.agents:
            agent.set_pos(uniform_positions(self.world, env_index, -1.0, 1.0), batch_index=env_index)
            agent.set_vel(torch.zeros_like(uniform_positions(self.world, env_index, 0, 0)),
                          batch_index=env_index)
        for landmark in self.world.landmarks:
            landmark.set_pos(
                uniform_positions(self.world, env_index, -landmark_range, landmark_range),
                batch_index=env_index,
            )

    def _reset_target(self, env_index: int | None) -> None:
        count = len(self.world.landmarks)
        if env_index is None:
            self.target_index = torch.randint(count, (self.world.batch_dim,), device=self.world.device)
        else:
            self.target_index[env_index] = torch.randint(count, (), device=self.world.device)

    def target_pos(self) -> torch.Tensor:
        """``[batch, 2]``: each env's target landmark position."""
        positions = torch.stack([landmark.state.pos for landmark in self.world.landmarks], dim=1)
        return positions[torch.arange(self.world.batch_dim, device=self.world.device), self.target_index]

    def place(
        self, agents: dict[str, Any], landmarks: Any = (), target: int | None = None
    ) -> None:
        """Put named agents and the first landmarks at rest at given positions in every env."""
        by_name = {agent.name: agent for agent in self.world.agents}
        batch = self.world.batch_dim
        for name, position in agents.items():
            if name not in by_name:
                raise KeyError(f"no agent '{name}'; agents: {', '.join(by_name)}")
            tensor = torch.tensor(position, dtype=torch.float32, device=self.world.device)
            by_name[name].set_pos(tensor.expand(batch, 2).clone(), batch_index=None)
            by_name[name].set_vel(torch.zeros(batch, 2, device=self.world.device), batch_index=None)
        for landmark, position in zip(self.world.landmarks, landmarks, strict=False):
            tensor = torch.tensor(position, dtype=torch.float32, device=self.world.device)
            landmark.set_pos(tensor.expand(batch, 2).clone(), batch_index=None)
        if target is not None:
            if not self.has_target:
                raise ValueError("this scenario has no target landmark")
            self.target_index = torch.full((batch,), target, device=self.world.device)

    @staticmethod
    def colliding(a: Agent | Landmark, b: Agent | Landmark) -> torch.Tensor:
        """``[batch]`` bool: closer than the sum of radii (mpe2's ``is_collision``)."""
        return distance(a.state.pos, b.state.pos) < a.shape.radius + b.shape.radius


class CooperativeNavigationScenario(_MpeLikeScenario):
    """mpe2 ``simple_spread``: M agents (size 0.15), M landmarks; local ratio 0.5."""

    def make_world(self, batch_dim: int, device: Any, **kwargs: Any) -> World:
        agents, continuous = kwargs["agents"], kwargs["continuous"]
        world = mpe_world(batch_dim, device)
        for index in range(agents):
            world.add_agent(mpe_agent(f"agent_{index}", continuous=continuous, size=0.15, color=BLUE))
        for index in range(agents):
            world.add_landmark(mpe_landmark(f"landmark {index}", size=0.05, color=GREY))
        return world

    def reset_world_at(self, env_index: int | None = None) -> None:
        self._reset_entities(env_index)

    def reward(self, agent: Agent) -> torch.Tensor:
        if agent is self.world.agents[0]:
            agent_pos = torch.stack([a.state.pos for a in self.world.agents], dim=1)
            landmark_pos = torch.stack([lm.state.pos for lm in self.world.landmarks], dim=1)
            closest = torch.cdist(landmark_pos, agent_pos).min(dim=-1).values
            self.global_reward = -closest.sum(dim=-1)
            # Every agent's collision count at once: pairs closer than the sum of radii (0.3).
            radius_sum = 2 * self.world.agents[0].shape.radius
            overlapping = torch.cdist(agent_pos, agent_pos) < radius_sum
            overlapping &= ~torch.eye(len(self.world.agents), dtype=torch.bool, device=agent_pos.device)
            self.collisions = overlapping.sum(dim=-1).float()
        index = self.world.agents.index(agent)
        return 0.5 * self.global_reward - 0.5 * self.collisions[:, index]

    def observation(self, agent: Agent) -> torch.Tensor:
        pos = agent.state.pos
        others = [o for o in self.world.agents if o is not agent]
        return torch.cat(
            [agent.state.vel, pos]
            + [lm.state.pos - pos for lm in self.world.landmarks]
            + [o.state.pos - pos for o in others]
            + [torch.zeros_like(pos) for _ in others],  # mpe2's (silent) communication slots
            dim=-1,
        )


def _arena_penalty(position: torch.Tensor) -> torch.Tensor:
    """mpe2 simple_tag's penalty for leaving the arena, summed over both coordinates."""
    x = position.abs()
    penalty = torch.where(
        x < 0.9, torch.zeros_like(x),
        torch.where(x < 1.0, (x - 0.9) * 10, torch.clamp(torch.exp(2 * x - 2), max=10.0)),
    )
    return penalty.sum(dim=-1)


class PredatorPreyScenario(_MpeLikeScenario):
    """mpe2 ``simple_tag`` with the paper's names: predators ``agent_i``, prey ``adversary_i``."""

    def make_world(self, batch_dim: int, device: Any, **kwargs: Any) -> World:
        continuous = kwargs["continuous"]
        world = mpe_world(batch_dim, device)
        for index in range(kwargs["agents"] - kwargs["adversaries"]):
            world.add_agent(mpe_agent(
                f"agent_{index}", continuous=continuous, size=0.075, color=RED,
                accel=3.0, max_speed=1.0,
            ))
        for index in range(kwargs["adversaries"]):
            world.add_agent(mpe_agent(
                f"adversary_{index}", continuous=continuous, size=0.05, color=GREEN,
                accel=4.0, max_speed=1.3, adversary=True,
            ))
        for index in range(kwargs["obstacles"]):
            world.add_landmark(mpe_landmark(f"landmark {index}", size=0.2, color=GREY, collide=True))
        return world

    @property
    def predators(self) -> list[Agent]:
        return [a for a in self.world.agents if not a.adversary]

    @property
    def prey(self) -> list[Agent]:
        return [a for a in self.world.agents if a.adversary]

    def reset_world_at(self, env_index: int | None = None) -> None:
        self._reset_entities(env_index, landmark_range=0.9)

    def reward(self, agent: Agent) -> torch.Tensor:
        if agent.adversary:  # prey
            caught = sum(self.colliding(predator, agent).float() for predator in self.predators)
            return -10.0 * torch.as_tensor(caught) - _arena_penalty(agent.state.pos)
        catches = sum(
            self.colliding(runner, predator).float()
            for runner in self.prey for predator in self.predators
        )
        return 10.0 * torch.as_tensor(catches) * torch.ones(self.world.batch_dim, device=self.world.device)

    def observation(self, agent: Agent) -> torch.Tensor:
        pos = agent.state.pos
        others = [o for o in self.world.agents if o is not agent]
        return torch.cat(
            [agent.state.vel, pos]
            + [lm.state.pos - pos for lm in self.world.landmarks]
            + [o.state.pos - pos for o in others]
            + [o.state.vel for o in others if o.adversary],  # mpe2: velocities of the prey
            dim=-1,
        )


class PhysicalDeceptionScenario(_MpeLikeScenario):
    """mpe2 ``simple_adversary``: one adversary (first in the world), M-1 good agents, L landmarks."""

    has_target = True

    def make_world(self, batch_dim: int, device: Any, **kwargs: Any) -> World:
        continuous = kwargs["continuous"]
        world = mpe_world(batch_dim, device)
        world.add_agent(mpe_agent("adversary_0", continuous=continuous, size=0.15, color=RED,
                                  collide=False, adversary=True))
        for index in range(kwargs["agents"] - 1):
            world.add_agent(mpe_agent(f"agent_{index}", continuous=continuous, size=0.15,
                                      color=BLUE, collide=False))
        for index in range(kwargs["landmarks"]):
            world.add_landmark(mpe_landmark(f"landmark {index}", size=0.08, color=GREY))
        self.target_index = torch.zeros(batch_dim, dtype=torch.long, device=device)
        return world

    def reset_world_at(self, env_index: int | None = None) -> None:
        self._reset_target(env_index)
        self._reset_entities(env_index)

    def reward(self, agent: Agent) -> torch.Tensor:
        target = self.target_pos()
        adversary_distance = sum(
            distance(a.state.pos, target) for a in self.world.agents if a.adversary
        )
        if agent.adversary:
            return -distance(agent.state.pos, target)
        good = torch.stack(
            [distance(a.state.pos, target) for a in self.world.agents if not a.adversary], dim=-1
        )
        return -good.min(dim=-1).values + torch.as_tensor(adversary_distance)

    def observation(self, agent: Agent) -> torch.Tensor:
        pos = agent.state.pos
        parts = [] if agent.adversary else [self.target_pos() - pos]
        parts += [lm.state.pos - pos for lm in self.world.landmarks]
        parts += [o.state.pos - pos for o in self.world.agents if o is not agent]
        return torch.cat(parts, dim=-1)


class KeepAwayScenario(_MpeLikeScenario):
    """marlplug's keep-away (see ``marlplug.envs.mpe.keep_away``): good agents first, then adversaries."""

    has_target = True

    def make_world(self, batch_dim: int, device: Any, **kwargs: Any) -> World:
        continuous = kwargs["continuous"]
        world = mpe_world(batch_dim, device)
        good = kwargs["agents"] - kwargs["adversaries"]
        for index in range(good):
            world.add_agent(mpe_agent(f"agent_{index}", continuous=continuous, size=0.05, color=BLUE))
        for index in range(kwargs["adversaries"]):
            world.add_agent(mpe_agent(f"adversary_{index}", continuous=continuous, size=0.075,
                                      color=RED, adversary=True))
        for index in range(kwargs["landmarks"]):
            world.add_landmark(mpe_landmark(f"landmark {index}", size=0.08, color=GREY))
        self.target_index = torch.zeros(batch_dim, dtype=torch.long, device=device)
        return world

    def reset_world_at(self, env_index: int | None = None) -> None:
        self._reset_target(env_index)
        self._reset_entities(env_index)

    def reward(self, agent: Agent) -> torch.Tensor:
        if agent is self.world.agents[0]:
            target = self.target_pos()

            def closest(team: list[Agent]) -> torch.Tensor:
                return torch.stack([distance(a.state.pos, target) for a in team], -1).min(-1).values

            good = [a for a in self.world.agents if not a.adversary]
            adversaries = [a for a in self.world.agents if a.adversary]
            self.team_reward = closest(adversaries) - closest(good)
        return -self.team_reward if agent.adversary else self.team_reward

    def observation(self, agent: Agent) -> torch.Tensor:
        pos = agent.state.pos
        parts = [agent.state.vel, pos]
        if not agent.adversary:
            parts.append(self.target_pos() - pos)
        parts += [lm.state.pos - pos for lm in self.world.landmarks]
        parts += [o.state.pos - pos for o in self.world.agents if o is not agent]
        return torch.cat(parts, dim=-1)


__all__ = [
    "CooperativeNavigationScenario",
    "KeepAwayScenario",
    "PhysicalDeceptionScenario",
    "PredatorPreyScenario",
]
