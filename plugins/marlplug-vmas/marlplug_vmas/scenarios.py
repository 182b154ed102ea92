"""The four scenarios as VMAS scenarios: same agents, observations and rewards as the mpe backend.

Each class mirrors its mpe counterpart in ``marlplug.envs.mpe`` term for term, batched over
environments (every tensor has a leading ``[batch]`` dim).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from vmas.simulator.core import Agent, World
from vmas.simulator.scenario import BaseScenario

from marlplug_vmas.physics import (
    distance,
    mpe_agent,
    mpe_landmark,
    mpe_world,
    pairwise_distance,
    uniform_positions,
)

BLUE = (0.35, 0.35, 0.85)
RED = (0.85, 0.35, 0.35)
GREEN = (0.35, 0.85, 0.35)
GREY = (0.25, 0.25, 0.25)
TARGET_GREEN = (0.15, 0.65, 0.15)


class _MpeLikeScenario(BaseScenario):
    """Shared resets and helpers; ``place`` puts entities at rest for scripted situations.

    VMAS asks for rewards and observations one agent at a time, always starting from the first
    agent of the world. The scenarios compute every agent's reward (and observation) in one
    batched pass on that first call and return slices for the others, so a step costs a fixed
    number of tensor operations however many agents there are.
    """

    world: World
    has_target = False

    def _reset_entities(self, env_index: int | None, landmark_range: float = 1.0) -> None:
        for agent in self.world.agents:
            agent.set_pos(
                uniform_positions(self.world, env_index, -1.0, 1.0), batch_index=env_index
            )
            agent.set_vel(
                torch.zeros_like(uniform_positions(self.world, env_index, 0, 0)),
                batch_index=env_index,
            )
        for landmark in self.world.landmarks:
            landmark.set_pos(
                uniform_positions(self.world, env_index, -landmark_range, landmark_range),
                batch_index=env_index,
            )

    def _reset_target(self, env_index: int | None) -> None:
        count = len(self.world.landmarks)
        if env_index is None:
            self.target_index = torch.randint(
                count, (self.world.batch_dim,), device=self.world.device
            )
        else:
            self.target_index[env_index] = torch.randint(count, (), device=self.world.device)

    def target_pos(self) -> torch.Tensor:
        """``[batch, 2]``: each env's target landmark position."""
        positions = self.landmark_positions()
        return positions[
            torch.arange(self.world.batch_dim, device=self.world.device), self.target_index
        ]

    def agent_positions(self) -> torch.Tensor:
        """``[batch, agents, 2]``: every agent's position, in world order."""
        return torch.stack([agent.state.pos for agent in self.world.agents], dim=1)

    def agent_velocities(self) -> torch.Tensor:
        """``[batch, agents, 2]``: every agent's velocity, in world order."""
        return torch.stack([agent.state.vel for agent in self.world.agents], dim=1)

    def landmark_positions(self) -> torch.Tensor:
        """``[batch, landmarks, 2]``: every landmark's position."""
        return torch.stack([landmark.state.pos for landmark in self.world.landmarks], dim=1)

    def index_of(self, agent: Agent) -> int:
        """The agent's position in ``world.agents``."""
        if not hasattr(self, "_agent_index"):
            self._agent_index = {a.name: i for i, a in enumerate(self.world.agents)}
        return self._agent_index[agent.name]

    def is_first(self, agent: Agent) -> bool:
        """Whether VMAS is starting a new round of per-agent calls (rewards or observations)."""
        return agent is self.world.agents[0]

    def relative_views(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each agent's view of the landmarks and of the other agents, as mpe2 lists them.

        Args:
            positions: ``[batch, agents, 2]`` agent positions.

        Returns:
            ``[batch, agents, 2 * landmarks]`` landmark positions relative to each agent and
            ``[batch, agents, 2 * (agents - 1)]`` other agents' positions relative to each agent
            (others in world order, the agent itself left out).
        """
        batch, count = positions.shape[:2]
        landmarks = self.landmark_positions().unsqueeze(1) - positions.unsqueeze(2)
        others = positions[:, others_index(count, positions.device)] - positions.unsqueeze(2)
        return landmarks.reshape(batch, count, -1), others.reshape(batch, count, -1)

    def place(self, agents: dict[str, Any], landmarks: Any = (), target: int | None = None) -> None:
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


@functools.lru_cache(maxsize=64)
def others_index(count: int, device: torch.device) -> torch.Tensor:
    """``[count, count - 1]``: row ``i`` lists the other agents ``j != i`` in ascending order."""
    columns = torch.arange(count, device=device).expand(count, count)
    keep = ~torch.eye(count, dtype=torch.bool, device=device)
    return columns[keep].reshape(count, count - 1)


class CooperativeNavigationScenario(_MpeLikeScenario):
    """mpe2 ``simple_spread``: M agents (size 0.15), M landmarks; local ratio 0.5."""

    def make_world(self, batch_dim: int, device: Any, **kwargs: Any) -> World:
        agents, continuous = kwargs["agents"], kwargs["continuous"]
        world = mpe_world(batch_dim, device)
        for index in range(agents):
            world.add_agent(
                mpe_agent(f"agent_{index}", continuous=continuous, size=0.15, color=BLUE)
            )
        for index in range(agents):
            world.add_landmark(mpe_landmark(f"landmark {index}", size=0.05, color=GREY))
        return world

    def reset_world_at(self, env_index: int | None = None) -> None:
        self._reset_entities(env_index)

    def reward(self, agent: Agent) -> torch.Tensor:
        if self.is_first(agent):
            positions = self.agent_positions()
            # Shared term: each landmark's distance to its closest agent, summed (once per step).
            closest = pairwise_distance(self.landmark_positions(), positions).min(dim=-1).values
            shared = -closest.sum(dim=-1, keepdim=True)
            # Local term: every agent's collision count from one pairwise distance matrix.
            radius_sum = 2 * self.world.agents[0].shape.radius
            overlapping = pairwise_distance(positions, positions) < radius_sum
            overlapping &= ~torch.eye(positions.shape[1], dtype=torch.bool, device=positions.device)
            self.rewards = 0.5 * shared - 0.5 * overlapping.sum(dim=-1).float()
        return self.rewards[:, self.index_of(agent)]

    def observation(self, agent: Agent) -> torch.Tensor:
        if self.is_first(agent):
            positions = self.agent_positions()
            landmarks, others = self.relative_views(positions)
            self.observations = torch.cat(
                # mpe2's (silent) communication slots are the trailing zeros.
                [self.agent_velocities(), positions, landmarks, others, torch.zeros_like(others)],
                dim=-1,
            )
        return self.observations[:, self.index_of(agent)]


def _arena_penalty(position: torch.Tensor) -> torch.Tensor:
    """mpe2 simple_tag's penalty for leaving the arena, summed over the last (x, y) dim."""
    x = position.abs()
    penalty = torch.where(
        x < 0.9,
        torch.zeros_like(x),
        torch.where(x < 1.0, (x - 0.9) * 10, torch.clamp(torch.exp(2 * x - 2), max=10.0)),
    )
    return penalty.sum(dim=-1)


class PredatorPreyScenario(_MpeLikeScenario):
    """mpe2 ``simple_tag`` with the paper's names: predators ``agent_i``, prey ``adversary_i``."""

    def make_world(self, batch_dim: int, device: Any, **kwargs: Any) -> World:
        continuous = kwargs["continuous"]
        world = mpe_world(batch_dim, device)
        for index in range(kwargs["agents"] - kwargs["adversaries"]):
            world.add_agent(
                mpe_agent(
                    f"agent_{index}",
                    continuous=continuous,
                    size=0.075,
                    color=RED,
                    accel=3.0,
                    max_speed=1.0,
                )
            )
        for index in range(kwargs["adversaries"]):
            world.add_agent(
                mpe_agent(
                    f"adversary_{index}",
                    continuous=continuous,
                    size=0.05,
                    color=GREEN,
                    accel=4.0,
                    max_speed=1.3,
                    adversary=True,
                )
            )
        for index in range(kwargs["obstacles"]):
            world.add_landmark(
                mpe_landmark(f"landmark {index}", size=0.2, color=GREY, collide=True)
            )
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
        # World order: predators first, then prey.
        predators = len(self.predators)
        if self.is_first(agent):
            positions = self.agent_positions()
            predator_pos, prey_pos = positions[:, :predators], positions[:, predators:]
            radius_sum = self.predators[0].shape.radius + self.prey[0].shape.radius
            caught = (pairwise_distance(predator_pos, prey_pos) < radius_sum).float()  # [b, P, K]
            catches = caught.sum(dim=(1, 2)).unsqueeze(-1).expand(-1, predators)
            prey_rewards = -10.0 * caught.sum(dim=1) - _arena_penalty(prey_pos)
            self.rewards = torch.cat([10.0 * catches, prey_rewards], dim=-1)
        return self.rewards[:, self.index_of(agent)]

    def observation(self, agent: Agent) -> torch.Tensor:
        predators = len(self.predators)
        if self.is_first(agent):
            positions, velocities = self.agent_positions(), self.agent_velocities()
            landmarks, others = self.relative_views(positions)
            own = torch.cat([velocities, positions, landmarks, others], dim=-1)
            prey_velocities = velocities[:, predators:]
            batch, count = prey_velocities.shape[:2]
            # mpe2 appends the velocities of the prey among the *other* agents.
            self.predator_observations = torch.cat(
                [
                    own[:, :predators],
                    prey_velocities.reshape(batch, 1, -1).expand(-1, predators, -1),
                ],
                dim=-1,
            )
            self.prey_observations = torch.cat(
                [
                    own[:, predators:],
                    prey_velocities[:, others_index(count, positions.device)].reshape(
                        batch, count, -1
                    ),
                ],
                dim=-1,
            )
        index = self.index_of(agent)
        if index < predators:
            return self.predator_observations[:, index]
        return self.prey_observations[:, index - predators]


class PhysicalDeceptionScenario(_MpeLikeScenario):
    """mpe2 ``simple_adversary``: one adversary (first in the world), M-1 good agents, L landmarks."""

    has_target = True

    def make_world(self, batch_dim: int, device: Any, **kwargs: Any) -> World:
        continuous = kwargs["continuous"]
        world = mpe_world(batch_dim, device)
        world.add_agent(
            mpe_agent(
                "adversary_0",
                continuous=continuous,
                size=0.15,
                color=RED,
                collide=False,
                adversary=True,
            )
        )
        for index in range(kwargs["agents"] - 1):
            world.add_agent(
                mpe_agent(
                    f"agent_{index}", continuous=continuous, size=0.15, color=BLUE, collide=False
                )
            )
        for index in range(kwargs["landmarks"]):
            world.add_landmark(mpe_landmark(f"landmark {index}", size=0.08, color=GREY))
        self.target_index = torch.zeros(batch_dim, dtype=torch.long, device=device)
        self.observe_velocity = bool(kwargs.get("observe_velocity", False))
        return world

    def reset_world_at(self, env_index: int | None = None) -> None:
        self._reset_target(env_index)
        self._reset_entities(env_index)

    def reward(self, agent: Agent) -> torch.Tensor:
        # World order: the adversary first, then the good agents.
        if self.is_first(agent):
            to_target = distance(self.agent_positions(), self.target_pos().unsqueeze(1))  # [b, M]
            adversary_distance = to_target[:, :1]
            good = -to_target[:, 1:].min(dim=-1, keepdim=True).values + adversary_distance
            self.rewards = torch.cat(
                [-adversary_distance, good.expand(-1, to_target.shape[1] - 1)], dim=-1
            )
        return self.rewards[:, self.index_of(agent)]

    def observation(self, agent: Agent) -> torch.Tensor:
        if self.is_first(agent):
            positions = self.agent_positions()
            landmarks, others = self.relative_views(positions)
            views = [landmarks, others]
            if self.observe_velocity:
                views.append(self.agent_velocities())
            self.observations = torch.cat(views, dim=-1)
            self.target_views = self.target_pos().unsqueeze(1) - positions
        index = self.index_of(agent)
        if agent.adversary:
            return self.observations[:, index]
        return torch.cat([self.target_views[:, index], self.observations[:, index]], dim=-1)


class KeepAwayScenario(_MpeLikeScenario):
    """marlplug's keep-away (see ``marlplug.envs.mpe.keep_away``): good agents first, then adversaries."""

    has_target = True

    def make_world(self, batch_dim: int, device: Any, **kwargs: Any) -> World:
        continuous = kwargs["continuous"]
        world = mpe_world(batch_dim, device)
        good = kwargs["agents"] - kwargs["adversaries"]
        for index in range(good):
            world.add_agent(
                mpe_agent(f"agent_{index}", continuous=continuous, size=0.05, color=BLUE)
            )
        for index in range(kwargs["adversaries"]):
            world.add_agent(
                mpe_agent(
                    f"adversary_{index}",
                    continuous=continuous,
                    size=0.075,
                    color=RED,
                    adversary=True,
                )
            )
        for index in range(kwargs["landmarks"]):
            world.add_landmark(mpe_landmark(f"landmark {index}", size=0.08, color=GREY))
        self.target_index = torch.zeros(batch_dim, dtype=torch.long, device=device)
        self.good_count = good
        return world

    def reset_world_at(self, env_index: int | None = None) -> None:
        self._reset_target(env_index)
        self._reset_entities(env_index)

    def reward(self, agent: Agent) -> torch.Tensor:
        if self.is_first(agent):
            to_target = distance(self.agent_positions(), self.target_pos().unsqueeze(1))  # [b, M]
            good, adversaries = to_target[:, : self.good_count], to_target[:, self.good_count :]
            self.team_reward = adversaries.min(dim=-1).values - good.min(dim=-1).values
        return -self.team_reward if agent.adversary else self.team_reward

    def observation(self, agent: Agent) -> torch.Tensor:
        if self.is_first(agent):
            positions = self.agent_positions()
            landmarks, others = self.relative_views(positions)
            self.head = torch.cat([self.agent_velocities(), positions], dim=-1)
            self.tail = torch.cat([landmarks, others], dim=-1)
            self.target_views = self.target_pos().unsqueeze(1) - positions
        index = self.index_of(agent)
        if agent.adversary:
            return torch.cat([self.head[:, index], self.tail[:, index]], dim=-1)
        return torch.cat(
            [self.head[:, index], self.target_views[:, index], self.tail[:, index]], dim=-1
        )


__all__ = [
    "CooperativeNavigationScenario",
    "KeepAwayScenario",
    "PhysicalDeceptionScenario",
    "PredatorPreyScenario",
]
