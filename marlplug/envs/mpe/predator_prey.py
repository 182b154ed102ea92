"""Predator-prey (mpe2 ``simple_tag``): M-K slower good agents chase K faster adversaries.

As in the paper, the good agents (group ``"agent"``) are the predators and the adversaries (group
``"adversary"``) the prey. mpe2 names them the other way round; only the names change here.
"""

from __future__ import annotations

from typing import ClassVar

from mpe2._mpe_utils.core import World
from mpe2._mpe_utils.scenario import BaseScenario
from mpe2.simple_tag.simple_tag import Scenario as SimpleTagScenario
from pydantic import Field

from marlplug.envs.entity_order import EntityLists, sortable
from marlplug.envs.mpe.base import MpeScenario
from marlplug.envs.options import (
    MAX_AGENTS,
    AdversarialOptions,
    EntityOrderOptions,
    ScenarioOptions,
)


class PredatorPreyOptions(AdversarialOptions, EntityOrderOptions):
    """Options of predator-prey: M-K predators (good), K prey (adversaries), static obstacles."""

    agents: int = Field(
        4, ge=2, le=MAX_AGENTS, description="Total number of agents M (predators + prey)."
    )
    adversaries: int = Field(1, ge=1, description="Number of prey K (faster; K < M).")
    obstacles: int = Field(
        2, ge=0, le=MAX_AGENTS, description="Number of static circular obstacles."
    )

    def entity_lists(self) -> EntityLists:
        """The obstacles and the (other) predators relative to the agent. The prey keep world
        order: mpe2 lists their velocities apart from their positions, and a sorted position
        would no longer sit at the index of its velocity.

        >>> PredatorPreyOptions(agents=5, adversaries=2, obstacles=2).entity_lists()
        {'agent': [(4, 2), (8, 2)], 'adversary': [(4, 2), (8, 3)]}
        """
        predators, obstacles = self.good_agents, self.obstacles
        lists = {
            "agent": [(4, obstacles), (4 + 2 * obstacles, predators - 1)],
            "adversary": [(4, obstacles), (4 + 2 * obstacles, predators)],
        }
        return sortable(lists)


class _RenamedTagScenario(SimpleTagScenario):
    """simple_tag with the paper's names: predators are ``agent_i``, prey are ``adversary_i``."""

    def make_world(
        self, num_good: int = 1, num_adversaries: int = 3, num_obstacles: int = 2
    ) -> World:
        world = super().make_world(num_good, num_adversaries, num_obstacles)
        predators = [a for a in world.agents if a.adversary]
        prey = [a for a in world.agents if not a.adversary]
        for index, predator in enumerate(predators):
            predator.name = f"agent_{index}"
        for index, runner in enumerate(prey):
            runner.name = f"adversary_{index}"
        return world


class PredatorPrey(MpeScenario):
    """M-K slower predators (good agents) chase K faster prey (adversaries) around obstacles.

    Rewards (mpe2 ``simple_tag``): every predator gets +10 for every predator-prey collision; a prey
    gets -10 for every predator touching it, plus a penalty for leaving the [-0.9, 0.9] square
    (``(|x|-0.9)*10`` up to 1, then ``min(exp(2|x|-2), 10)`` per coordinate). Predators: size 0.075,
    accel 3, max speed 1.0; prey: size 0.05, accel 4, max speed 1.3; obstacles: size 0.2.

    Examples:
        >>> env = PredatorPrey(agents=4, adversaries=1).make(seed=0)
        >>> sorted(env.group_map)
        ['adversary', 'agent']
    """

    Options: ClassVar[type[ScenarioOptions]] = PredatorPreyOptions
    scenario: ClassVar[str] = "predator_prey"
    summary: ClassVar[str] = (
        "M-K slower predators (good) chase K faster prey (adversaries) around obstacles (simple_tag)"
    )

    def mpe_scenario(self) -> tuple[BaseScenario, World]:
        options = self.options
        assert isinstance(options, PredatorPreyOptions)
        scenario = _RenamedTagScenario()
        world = scenario.make_world(
            num_good=options.adversaries,
            num_adversaries=options.good_agents,
            num_obstacles=options.obstacles,
        )
        return scenario, world
