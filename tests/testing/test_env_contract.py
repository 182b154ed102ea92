"""Every built-in mpe scenario passes the env contract that plugin authors run (marlplug.testing),
and the contract catches the mistakes plugin authors made without it."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from torchrl.envs import EnvBase, SerialEnv

from marlplug.envs.mpe import CooperativeNavigation, KeepAway, PhysicalDeception, PredatorPrey
from marlplug.envs.mpe.base import MpeScenario
from marlplug.testing import EnvScenarioContract, check_env_scenario


class TestCooperativeNavigation(EnvScenarioContract):
    scenario_class = CooperativeNavigation
    options: ClassVar[dict[str, Any]] = {"agents": 3}
    registered_name = "mpe/cooperative_navigation"


class TestPredatorPrey(EnvScenarioContract):
    scenario_class = PredatorPrey
    options: ClassVar[dict[str, Any]] = {"agents": 4, "adversaries": 2, "obstacles": 1}
    registered_name = "mpe/predator_prey"


class TestPhysicalDeception(EnvScenarioContract):
    scenario_class = PhysicalDeception
    options: ClassVar[dict[str, Any]] = {"agents": 3, "continuous_actions": True}
    registered_name = "mpe/physical_deception"


class TestKeepAway(EnvScenarioContract):
    scenario_class = KeepAway
    options: ClassVar[dict[str, Any]] = {"agents": 4, "adversaries": 2}
    registered_name = "mpe/keep_away"


class ListGroupMap(CooperativeNavigation):
    """The mistake SerialEnv invites: its group_map is forwarded as one value per copy."""

    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        env = SerialEnv(num_envs, lambda: self._single(device), device=device)
        env.start()
        env.group_map = [dict(sub.group_map) for sub in env._envs]
        return env


class Unseeded(CooperativeNavigation):
    """Ignores the seed it is given."""

    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        return MpeScenario._build(self, num_envs=num_envs, seed=None, device=device)


@pytest.mark.filterwarnings("ignore:.*without specifying any render mode")
@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (ListGroupMap, "group_map must be a dict"),
        (Unseeded, "differs"),
    ],
    ids=["group_map-list", "ignores-seed"],
)
def test_the_contract_catches(broken: type[MpeScenario], message: str) -> None:
    num_envs = (2,) if broken is ListGroupMap else (1,)
    with pytest.raises(Exception, match=message):
        check_env_scenario(broken, options={"agents": 2}, num_envs=num_envs, steps=2)


def test_options_must_subclass_scenario_options() -> None:
    from marlplug.config import Options

    class PlainOptions(Options):
        agents: int = 2

    class PlainScenario(CooperativeNavigation):
        Options = PlainOptions  # type: ignore[assignment]

    with pytest.raises(AssertionError, match=r"must subclass marlplug\.envs\.ScenarioOptions"):
        check_env_scenario(PlainScenario, num_envs=(1,))
