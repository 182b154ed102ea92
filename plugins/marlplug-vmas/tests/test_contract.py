"""marlplug-vmas's scenarios pass marlplug's env contract, installed through the entry point."""

from __future__ import annotations

from typing import Any, ClassVar

from marlplug_vmas import CooperativeNavigation, KeepAway, PhysicalDeception, PredatorPrey

from marlplug.testing import EnvScenarioContract


class TestCooperativeNavigation(EnvScenarioContract):
    scenario_class = CooperativeNavigation
    options: ClassVar[dict[str, Any]] = {"agents": 3}
    registered_name = "vmas/cooperative_navigation"


class TestPredatorPrey(EnvScenarioContract):
    scenario_class = PredatorPrey
    options: ClassVar[dict[str, Any]] = {"agents": 4, "adversaries": 2, "obstacles": 1}
    registered_name = "vmas/predator_prey"


class TestPhysicalDeception(EnvScenarioContract):
    scenario_class = PhysicalDeception
    options: ClassVar[dict[str, Any]] = {"agents": 3, "continuous_actions": True}
    registered_name = "vmas/physical_deception"


class TestKeepAway(EnvScenarioContract):
    scenario_class = KeepAway
    options: ClassVar[dict[str, Any]] = {"agents": 4, "adversaries": 2}
    registered_name = "vmas/keep_away"
