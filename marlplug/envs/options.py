"""The options every scenario understands, and the checks that tie them together (K < M, ...).

Each scenario's ``Options`` subclasses one of these, so a config error always names the bad field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from marlplug.config import Options

if TYPE_CHECKING:
    from marlplug.envs.entity_order import EntityLists
    from marlplug.envs.state import StateColumns

#: Most agents a scenario accepts: every bundled scenario's observation grows with the number of
#: agents, so one step costs O(M^2); beyond this even building the env takes minutes.
MAX_AGENTS = 1024


class ScenarioOptions(Options):
    """Fields shared by every scenario: team size, action type and episode length.

    Example:
        >>> ScenarioOptions(agents=4).max_steps
        25
    """

    #: Set to False in a scenario that only has discrete actions.
    supports_continuous_actions: ClassVar[bool] = True

    agents: int = Field(
        3, ge=1, le=MAX_AGENTS, description="Total number of agents M (both teams)."
    )
    continuous_actions: bool = Field(
        False, description="Continuous 5-dim force actions in [0, 1] instead of Discrete(5)."
    )
    max_steps: int = Field(
        25, ge=1, le=10**6, description="Episode length; the env truncates after it."
    )

    def min_observation_floats(self) -> int:
        """A lower bound of one agent's observation size, for the memory estimate of a run.

        Every bundled scenario observes the other agents' relative positions (2 floats each) and
        its own position and velocity; a scenario that observes less overrides this.

        >>> ScenarioOptions(agents=4).min_observation_floats()
        8
        """
        return 2 * self.agents

    def state_columns(self) -> StateColumns | None:
        """The scenario's compact global state as observation entries (per group, ``(agent,
        column)`` pairs; :mod:`marlplug.envs.state`), or ``None`` when it defines none.

        >>> ScenarioOptions().state_columns() is None
        True
        """
        return None

    def entity_lists(self) -> EntityLists | None:
        """The lists of 2-float relative positions in the observations (per group, ``(first
        column, entries)``) that ``entity_order: nearest`` sorts, or ``None`` when the scenario
        declares none.

        >>> ScenarioOptions().entity_lists() is None
        True

        A scenario that declares lists subclasses :class:`EntityOrderOptions`, whose
        ``entity_order`` chooses the order.
        """
        return None

    @field_validator("continuous_actions")
    @classmethod
    def _continuous_supported(cls, value: bool) -> bool:
        if value and not cls.supports_continuous_actions:
            raise PydanticCustomError(
                "continuous_unsupported", "this scenario only supports discrete actions (false)"
            )
        return value


class EntityOrderOptions(ScenarioOptions):
    """A scenario whose observations list entities (:meth:`~ScenarioOptions.entity_lists`) that
    each agent may see in world order or nearest first.

    ``make_env`` lists them in world order, as the reference env (mpe2) does; a run's config lists
    them nearest first unless it says otherwise (:attr:`run_defaults`).

    Example:
        >>> EntityOrderOptions().entity_order, EntityOrderOptions.run_defaults
        ('world', {'entity_order': 'nearest'})
    """

    # Measured on cooperative navigation: nearest first lets PPO learn it at 8 agents and more,
    # and at 3 (with ReLU layers) it raised the median of seeds 0-4 from -54.2 to -45.9
    # (docs/notes/benchmarks-history.md, "ReLU with nearest first"). The other built-in scenarios
    # take it too, so `--set env.name=keep_away` keeps the run's order.
    run_defaults: ClassVar[Mapping[str, Any]] = {"entity_order": "nearest"}

    entity_order: Literal["world", "nearest"] = Field(
        "world",
        description="How each agent's observation lists the landmarks and the other agents: in "
        "world order (mpe2's) or nearest first (the same numbers, each list sorted by distance to "
        "the agent; marlplug.envs.entity_order). Nearest first is what lets PPO learn cooperative "
        "navigation at 8 agents and more; the reward and dynamics are the same.",
    )


class AdversarialOptions(ScenarioOptions):
    """A scenario with ``agents - adversaries`` good agents and ``adversaries`` adversaries.

    Example:
        >>> AdversarialOptions(agents=8, adversaries=4).adversaries
        4
    """

    adversaries: int = Field(1, ge=1, description="Number of adversaries K (K < M).")

    @field_validator("adversaries")
    @classmethod
    def _fewer_than_agents(cls, value: int, info: ValidationInfo) -> int:
        agents = info.data.get("agents")
        if agents is not None and value >= agents:
            raise PydanticCustomError(
                "adversaries_not_fewer",
                "must be fewer than agents ({agents}) so at least one good agent remains",
                {"agents": agents},
            )
        return value

    @property
    def good_agents(self) -> int:
        """``agents - adversaries``."""
        return self.agents - self.adversaries


def check_landmarks(value: int | None, info: ValidationInfo, *, minimum: int = 1) -> int | None:
    """Shared check for an optional ``landmarks`` count (``None`` picks the scenario default)."""
    if value is not None and value < minimum:
        raise PydanticCustomError(
            "too_few_landmarks",
            "must be at least {minimum} (or null for the default)",
            {"minimum": minimum},
        )
    return value
