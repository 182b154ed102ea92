"""VMAS's own scenarios, registered as ``vmas/<name>``, pass marlplug's env contract (a
representative set), and every one of them builds and steps in both action modes."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from marlplug_vmas.keywords import scenario_names
from marlplug_vmas.native import native_scenario

from marlplug.envs import make_env, read_layout
from marlplug.testing import EnvScenarioContract
from marlplug.testing.envs import check_group_map, check_rollout_matches_specs


class TestBalance(EnvScenarioContract):
    scenario_class = native_scenario("balance")
    options: ClassVar[dict[str, Any]] = {"agents": 2, "package_mass": 2.5}
    registered_name = "vmas/balance"


class TestNavigation(EnvScenarioContract):
    scenario_class = native_scenario("navigation")
    options: ClassVar[dict[str, Any]] = {"agents": 2, "continuous_actions": False}
    registered_name = "vmas/navigation"


class TestSampling(EnvScenarioContract):
    scenario_class = native_scenario("sampling")
    options: ClassVar[dict[str, Any]] = {"agents": 2}
    registered_name = "vmas/sampling"
    num_envs = (2,)
    # VMAS 1.5.2 draws its density map with matplotlib.cm.get_cmap, which matplotlib 3.9 removed.
    renders = False


class TestTransport(EnvScenarioContract):
    scenario_class = native_scenario("transport")
    options: ClassVar[dict[str, Any]] = {"agents": 3}
    registered_name = "vmas/transport"


class TestWheel(EnvScenarioContract):
    scenario_class = native_scenario("wheel")
    options: ClassVar[dict[str, Any]] = {"agents": 3, "line_length": 1.5}
    registered_name = "vmas/wheel"


class TestDispersion(EnvScenarioContract):
    scenario_class = native_scenario("dispersion")
    options: ClassVar[dict[str, Any]] = {"agents": 3, "n_food": 2}
    registered_name = "vmas/dispersion"


class TestGiveWay(EnvScenarioContract):
    scenario_class = native_scenario("give_way")
    options: ClassVar[dict[str, Any]] = {}  # two agents, fixed by the scenario
    registered_name = "vmas/give_way"


class TestSimpleTag(EnvScenarioContract):
    """Heterogeneous teams stay TorchRL groups."""

    scenario_class = native_scenario("simple_tag")
    options: ClassVar[dict[str, Any]] = {"num_good_agents": 2, "num_adversaries": 2}
    registered_name = "vmas/simple_tag"
    num_envs = (2,)


@pytest.mark.parametrize("continuous", [True, False], ids=["continuous", "discrete"])
@pytest.mark.parametrize("scenario", sorted(scenario_names()))
def test_every_vmas_scenario_builds_and_steps(scenario: str, continuous: bool) -> None:
    env = make_env(scenario, backend="vmas", num_envs=2, seed=0, continuous_actions=continuous)
    options = native_scenario(scenario).Options(continuous_actions=continuous)
    check_group_map(env, options.agents)
    check_rollout_matches_specs(env, steps=2)
    layout = read_layout(env)  # what marlplug's networks are sized from
    assert all(group.continuous is continuous for group in layout)
    env.close()
