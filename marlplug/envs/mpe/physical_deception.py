"""Physical deception (mpe2 ``simple_adversary``): M-1 good agents, 1 adversary, L landmarks."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from mpe2._mpe_utils.core import Landmark, World
from mpe2._mpe_utils.scenario import BaseScenario
from mpe2.simple_adversary.simple_adversary import Scenario as SimpleAdversaryScenario
from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from marlplug.envs.entity_order import EntityLists, sortable
from marlplug.envs.mpe.base import MpeScenario
from marlplug.envs.options import (
    MAX_AGENTS,
    AdversarialOptions,
    EntityOrderOptions,
    ScenarioOptions,
)


class PhysicalDeceptionOptions(AdversarialOptions, EntityOrderOptions):
    """Options of physical deception: M-1 good agents, exactly one adversary, L landmarks.

    Both backends give the same observations: a good agent sees ``[target, landmarks, adversary,
    other good agents]`` and the adversary ``[landmarks, good agents]``, each relative to itself,
    then its own velocity with ``observe_velocity``.
    """

    agents: int = Field(
        3, ge=2, le=MAX_AGENTS, description="Total number of agents M (M-1 good + 1 adversary)."
    )
    adversaries: int = Field(1, description="Number of adversaries; always 1 in this scenario.")
    landmarks: int | None = Field(
        None,
        ge=1,
        le=MAX_AGENTS,
        description="Number of landmarks L, one of them the target; null means M-1.",
    )
    observe_velocity: bool = Field(
        False,
        description="Append each agent's own velocity to its observation (the other three "
        "scenarios observe it; simple_adversary does not, so a move, which changes the velocity "
        "first and the position a step later, is invisible in the next observation).",
    )

    @field_validator("adversaries")
    @classmethod
    def _exactly_one(cls, value: int) -> int:
        if value != 1:
            raise PydanticCustomError("one_adversary", "physical_deception has exactly 1 adversary")
        return value

    @property
    def num_landmarks(self) -> int:
        """``landmarks``, or ``agents - 1`` when it is null."""
        return self.landmarks if self.landmarks is not None else self.agents - 1

    def entity_lists(self) -> EntityLists:
        """The landmarks and the other good agents; the target (a good agent's first two columns)
        and the adversary (in a good agent's view) keep their slots, so nearest first never hides
        which entity is which. Lists of one entry are left out (nothing to sort), and so is a
        group left with none.

        >>> PhysicalDeceptionOptions(agents=4).entity_lists()
        {'agent': [(2, 3), (10, 2)], 'adversary': [(0, 3), (6, 3)]}
        """
        landmarks, good = self.num_landmarks, self.agents - 1
        lists = {
            "agent": [(2, landmarks), (4 + 2 * landmarks, good - 1)],
            "adversary": [(0, landmarks), (2 * landmarks, good)],
        }
        return sortable(lists)


class _SizedAdversaryScenario(SimpleAdversaryScenario):
    """simple_adversary with a free landmark count (mpe2 ties it to the number of good agents),
    and each agent's own velocity after its observation when ``observe_velocity``."""

    def __init__(self, *, observe_velocity: bool = False) -> None:
        super().__init__()
        self.observe_velocity = observe_velocity

    def observation(self, agent: Any, world: World) -> np.ndarray:
        seen = super().observation(agent, world)
        if not self.observe_velocity:
            return seen
        return np.concatenate([seen, agent.state.p_vel])

    def make_world(self, N: int = 2, num_landmarks: int | None = None) -> World:
        world = super().make_world(N)
        count = N if num_landmarks is None else num_landmarks
        while len(world.landmarks) < count:
            landmark = Landmark()
            landmark.name = f"landmark {len(world.landmarks)}"
            landmark.collide = False
            landmark.movable = False
            landmark.size = 0.08
            world.landmarks.append(landmark)
        del world.landmarks[count:]
        return world


class PhysicalDeception(MpeScenario):
    """M-1 good agents reach a target landmark they know; one adversary must guess it.

    Rewards (mpe2 ``simple_adversary``, shaped): every good agent gets
    ``-min_i d(good_i, target) + d(adversary, target)``; the adversary gets ``-d(adversary, target)``.
    Good agents observe the target; the adversary sees only landmarks and agents.

    Examples:
        >>> env = PhysicalDeception(agents=4).make(seed=0)
        >>> env.group_map["adversary"]
        ['adversary_0']
    """

    Options: ClassVar[type[ScenarioOptions]] = PhysicalDeceptionOptions
    scenario: ClassVar[str] = "physical_deception"
    summary: ClassVar[str] = (
        "M-1 good agents cover a known target among L landmarks; 1 adversary guesses it "
        "(simple_adversary)"
    )

    def mpe_scenario(self) -> tuple[BaseScenario, World]:
        options = self.options
        assert isinstance(options, PhysicalDeceptionOptions)
        scenario = _SizedAdversaryScenario(observe_velocity=options.observe_velocity)
        world = scenario.make_world(options.good_agents, num_landmarks=options.num_landmarks)
        return scenario, world

    def _set_target(self, world: World, landmark: Any) -> None:
        for agent in world.agents:
            agent.goal_a = landmark
