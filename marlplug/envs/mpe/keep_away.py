"""Keep-away, scalable: M-K good agents reach a target landmark, K adversaries push them away.

mpe2 only has the 1-vs-1 ``simple_push``; this is the M-agent version on mpe2's core classes.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from mpe2._mpe_utils.core import Agent, Landmark, World
from mpe2._mpe_utils.scenario import BaseScenario
from pydantic import Field

from marlplug.envs.entity_order import EntityLists, sortable
from marlplug.envs.mpe.base import MpeScenario
from marlplug.envs.options import (
    MAX_AGENTS,
    AdversarialOptions,
    EntityOrderOptions,
    ScenarioOptions,
)

GOOD_SIZE = 0.05
ADVERSARY_SIZE = 0.075
LANDMARK_SIZE = 0.08
GOOD_COLOR = np.array([0.35, 0.35, 0.85])
ADVERSARY_COLOR = np.array([0.85, 0.35, 0.35])
LANDMARK_COLOR = np.array([0.25, 0.25, 0.25])
TARGET_COLOR = np.array([0.15, 0.65, 0.15])


class KeepAwayOptions(AdversarialOptions, EntityOrderOptions):
    """Options of keep-away: M-K good agents, K adversaries, L landmarks (one is the target)."""

    agents: int = Field(2, ge=2, description="Total number of agents M (good + adversaries).")
    adversaries: int = Field(1, ge=1, description="Number of adversaries K (K < M).")
    landmarks: int = Field(
        2, ge=1, le=MAX_AGENTS, description="Number of landmarks L; one is the target."
    )

    def entity_lists(self) -> EntityLists:
        """The landmarks, the other good agents and the adversaries, each a list of its own, so
        that nearest first never mixes the teams. A good agent's target keeps its slot (columns 4
        and 5), which is what tells it which landmark to reach.

        >>> KeepAwayOptions(agents=5, adversaries=2, landmarks=3).entity_lists()
        {'agent': [(6, 3), (12, 2), (16, 2)], 'adversary': [(4, 3), (10, 3)]}
        """
        good, adversaries, landmarks = self.good_agents, self.adversaries, self.landmarks
        others = 6 + 2 * landmarks  # a good agent's other agents: good ones, then adversaries
        lists = {
            "agent": [(6, landmarks), (others, good - 1), (others + 2 * (good - 1), adversaries)],
            "adversary": [
                (4, landmarks),
                (4 + 2 * landmarks, good),
                (4 + 2 * landmarks + 2 * good, adversaries - 1),
            ],
        }
        return sortable(lists)


class KeepAwayWorld(BaseScenario):
    """The mpe2 scenario: physics, resets, rewards and observations of keep-away.

    Rewards are shared within a team and zero-sum between teams. With ``d_good`` the distance of
    the good agent closest to the target and ``d_adv`` that of the closest adversary:
    every good agent gets ``d_adv - d_good``, every adversary ``d_good - d_adv``.

    Observations: good agents ``[vel, pos, target - pos, landmarks - pos, others - pos]``;
    adversaries (who do not know the target) ``[vel, pos, landmarks - pos, others - pos]``.
    Every agent collides with every other, so adversaries can block and push.

    Examples:
        >>> scenario = KeepAwayWorld()
        >>> world = scenario.make_world(good_agents=3, adversaries=2, landmarks=2)
        >>> [agent.name for agent in world.agents]
        ['agent_0', 'agent_1', 'agent_2', 'adversary_0', 'adversary_1']
    """

    def make_world(self, good_agents: int = 1, adversaries: int = 1, landmarks: int = 2) -> World:
        world = World()
        world.dim_c = 2
        world.agents = []
        for index in range(good_agents + adversaries):
            agent = Agent()
            agent.adversary = index >= good_agents
            agent.name = (
                f"adversary_{index - good_agents}" if index >= good_agents else f"agent_{index}"
            )
            agent.collide = True
            agent.silent = True
            agent.size = ADVERSARY_SIZE if index >= good_agents else GOOD_SIZE
            world.agents.append(agent)
        world.landmarks = []
        for index in range(landmarks):
            landmark = Landmark()
            landmark.name = f"landmark {index}"
            landmark.collide = False
            landmark.movable = False
            landmark.size = LANDMARK_SIZE
            world.landmarks.append(landmark)
        world.target = world.landmarks[0]
        return world

    def reset_world(self, world: World, np_random: Any) -> None:
        target_index = int(np_random.integers(len(world.landmarks)))
        world.target = world.landmarks[target_index]
        for agent in world.agents:
            agent.color = ADVERSARY_COLOR if agent.adversary else GOOD_COLOR
            agent.state.p_pos = np_random.uniform(-1, +1, world.dim_p)
            agent.state.p_vel = np.zeros(world.dim_p)
            agent.state.c = np.zeros(world.dim_c)
        for index, landmark in enumerate(world.landmarks):
            landmark.color = TARGET_COLOR if index == target_index else LANDMARK_COLOR
            landmark.state.p_pos = np_random.uniform(-1, +1, world.dim_p)
            landmark.state.p_vel = np.zeros(world.dim_p)

    @staticmethod
    def _closest_distance(agents: list[Agent], target: Landmark) -> float:
        return float(min(np.linalg.norm(a.state.p_pos - target.state.p_pos) for a in agents))

    def team_reward(self, world: World) -> float:
        """``d_adv - d_good``: what every good agent gets (adversaries get its negative)."""
        target = world.target
        good = [a for a in world.agents if not a.adversary]
        adversaries = [a for a in world.agents if a.adversary]
        return self._closest_distance(adversaries, target) - self._closest_distance(good, target)

    def reward(self, agent: Agent, world: World) -> float:
        reward = self.team_reward(world)
        return -reward if agent.adversary else reward

    def observation(self, agent: Agent, world: World) -> np.ndarray:
        position = agent.state.p_pos
        landmarks = [landmark.state.p_pos - position for landmark in world.landmarks]
        others = [other.state.p_pos - position for other in world.agents if other is not agent]
        own = [agent.state.p_vel, position]
        if not agent.adversary:
            own.append(world.target.state.p_pos - position)
        return np.concatenate(own + landmarks + others)


class KeepAway(MpeScenario):
    """M-K good agents reach a target landmark they know; K adversaries keep them away.

    Both sides are rewarded by distance to the target (see :class:`KeepAwayWorld`); adversaries,
    larger than good agents, can block and push them. Default M=2, K=1 is mpe2's ``simple_push``
    set-up.

    Examples:
        >>> env = KeepAway(agents=8, adversaries=4).make(seed=0)
        >>> env.observation_spec["agent", "observation"].shape
        torch.Size([4, 24])
    """

    Options: ClassVar[type[ScenarioOptions]] = KeepAwayOptions
    scenario: ClassVar[str] = "keep_away"
    summary: ClassVar[str] = (
        "M-K good agents reach a known target among L landmarks; K adversaries block them"
    )

    def mpe_scenario(self) -> tuple[BaseScenario, World]:
        options = self.options
        assert isinstance(options, KeepAwayOptions)
        scenario = KeepAwayWorld()
        world = scenario.make_world(
            good_agents=options.good_agents,
            adversaries=options.adversaries,
            landmarks=options.landmarks,
        )
        return scenario, world

    def _set_target(self, world: World, landmark: Any) -> None:
        world.target = landmark
