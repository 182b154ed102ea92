"""Cooperative navigation (mpe2 ``simple_spread``): M agents cover M landmarks without colliding."""

from __future__ import annotations

from typing import ClassVar

from mpe2._mpe_utils.core import World
from mpe2._mpe_utils.scenario import BaseScenario
from mpe2.simple_spread.simple_spread import Scenario as SimpleSpreadScenario

from marlplug.envs.entity_order import EntityLists
from marlplug.envs.mpe.base import MpeScenario
from marlplug.envs.options import EntityOrderOptions, ScenarioOptions
from marlplug.envs.state import StateColumns


class CooperativeNavigationOptions(EntityOrderOptions):
    """Options of cooperative navigation: M agents and as many landmarks.

    Both backends share these options and give the same observations (``[velocity, position,
    landmarks - position, others - position, silent communication]``), so the global state is
    declared here once.
    """

    def state_columns(self) -> StateColumns:
        """Every agent's velocity and position (4 floats each, from its own observation), then
        the landmarks relative to agent 0 (2 floats each): ``6 M`` floats, each entity once.

        >>> len(CooperativeNavigationOptions(agents=3).state_columns()["agent"])
        18
        """
        own = [(agent, column) for agent in range(self.agents) for column in range(4)]
        landmarks = [(0, 4 + column) for column in range(2 * self.agents)]
        return {"agent": own + landmarks}

    def entity_lists(self) -> EntityLists:
        """The landmarks (from column 4, M of them) and the other agents (M - 1, after the
        landmarks) relative to the agent. Their silent communication slots (all zeros in
        simple_spread) stay as they are.

        >>> CooperativeNavigationOptions(agents=3).entity_lists()
        {'agent': [(4, 3), (10, 2)]}
        """
        return {"agent": [(4, self.agents), (4 + 2 * self.agents, self.agents - 1)]}


class CooperativeNavigation(MpeScenario):
    """M agents cooperatively cover M landmarks (mpe2 ``simple_spread``).

    Every agent gets ``0.5 * global + 0.5 * local``: global is minus the sum over landmarks of the
    closest agent's distance, local is -1 per other agent it collides with.

    Examples:
        >>> env = CooperativeNavigation(agents=3).make(seed=0)
        >>> env.observation_spec["agent", "observation"].shape
        torch.Size([3, 18])
    """

    Options: ClassVar[type[ScenarioOptions]] = CooperativeNavigationOptions
    scenario: ClassVar[str] = "cooperative_navigation"
    summary: ClassVar[str] = "M agents cover M landmarks, penalized for collisions (simple_spread)"
    local_ratio: ClassVar[float | None] = 0.5

    def mpe_scenario(self) -> tuple[BaseScenario, World]:
        scenario = SimpleSpreadScenario()
        return scenario, scenario.make_world(self.options.agents)
