"""The four scenarios as marlplug env components on the ``vmas`` backend.

Options are the mpe backend's ``Options`` classes, so one config switches backend by one field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from torchrl.data import Bounded
from torchrl.envs import Compose, EnvBase, StepCounter, TransformedEnv
from torchrl.envs.libs.vmas import VmasEnv
from vmas.simulator.scenario import BaseScenario

from marlplug.envs import EnvScenario
from marlplug.envs.mpe.cooperative_navigation import CooperativeNavigationOptions
from marlplug.envs.mpe.keep_away import KeepAwayOptions
from marlplug.envs.mpe.physical_deception import PhysicalDeceptionOptions
from marlplug.envs.mpe.predator_prey import PredatorPreyOptions
from marlplug.envs.options import ScenarioOptions
from marlplug.errors import UserError
from marlplug_vmas.scenarios import (
    CooperativeNavigationScenario,
    KeepAwayScenario,
    PhysicalDeceptionScenario,
    PredatorPreyScenario,
)
from marlplug_vmas.transforms import GroupDones


class VmasScenario(EnvScenario):
    """Base class of the vmas-backend scenarios: a VMAS scenario class plus its world arguments.

    All ``num_envs`` copies step together as one batch of torch tensors (no Python loop over
    envs); the env's batch size is always ``[num_envs]``. Episodes are truncated after
    ``max_steps`` by a ``StepCounter``, so ``truncated`` is set as on the mpe backend.

    Examples:
        >>> from marlplug_vmas import KeepAway
        >>> env = KeepAway(agents=8, adversaries=4).make(num_envs=32, seed=0)
        >>> env.rollout(3)["next", "adversary", "reward"].shape
        torch.Size([32, 3, 4, 1])
    """

    backend: ClassVar[str] = "vmas"
    vmas_scenario: ClassVar[type[BaseScenario]]

    def world_arguments(self) -> dict[str, Any]:
        """Keyword arguments for the VMAS scenario's ``make_world``."""
        arguments = self.options.model_dump(exclude={"max_steps", "continuous_actions"})
        # VmasEnv consumes `continuous_actions` itself; the world needs it to size actions.
        return {**arguments, "continuous": self.options.continuous_actions}

    def group_map(self) -> dict[str, list[str]]:
        """Group name -> agent names, in the same order as on the mpe backend."""
        options = self.options.model_dump()
        adversaries = options.get("adversaries", 0)
        groups = {"agent": [f"agent_{i}" for i in range(options["agents"] - adversaries)]}
        if adversaries:
            groups["adversary"] = [f"adversary_{i}" for i in range(adversaries)]
        return groups

    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        group_map = self.group_map()
        base = VmasEnv(
            scenario=self.vmas_scenario(),
            num_envs=num_envs,
            device=device,
            continuous_actions=self.options.continuous_actions,
            categorical_actions=True,
            max_steps=None,
            group_map=group_map,
            seed=seed,
            **self.world_arguments(),
        )
        if self.options.continuous_actions:
            # VMAS declares [-u_range, u_range]; the MPE action is a 5-vector in [0, 1].
            actions = base.full_action_spec.clone()
            for group in group_map:
                spec = actions[group, "action"]
                actions[group, "action"] = Bounded(
                    low=0.0, high=1.0, shape=spec.shape, dtype=spec.dtype, device=spec.device
                )
            base.full_action_spec = actions
        env = TransformedEnv(
            base, Compose(StepCounter(max_steps=self.options.max_steps), GroupDones(group_map))
        )
        env.group_map = group_map
        return env

    def place(
        self,
        env: EnvBase,
        *,
        agents: Mapping[str, Sequence[float]],
        landmarks: Sequence[Sequence[float]] = (),
        target: int | None = None,
    ) -> None:
        base = env.base_env if isinstance(env, TransformedEnv) else env
        try:
            base._env.scenario.place(dict(agents), landmarks, target)
        except (KeyError, ValueError) as exc:
            raise UserError(f"{self.backend}/{self.scenario}: {exc}") from None


class CooperativeNavigation(VmasScenario):
    """Cooperative navigation on VMAS; same definition as ``mpe/cooperative_navigation``."""

    Options: ClassVar[type[ScenarioOptions]] = CooperativeNavigationOptions
    scenario: ClassVar[str] = "cooperative_navigation"
    summary: ClassVar[str] = "M agents cover M landmarks, penalized for collisions (vectorized)"
    vmas_scenario = CooperativeNavigationScenario


class PredatorPrey(VmasScenario):
    """Predator-prey on VMAS; same definition as ``mpe/predator_prey``."""

    Options: ClassVar[type[ScenarioOptions]] = PredatorPreyOptions
    scenario: ClassVar[str] = "predator_prey"
    summary: ClassVar[str] = (
        "M-K slower predators chase K faster prey around obstacles (vectorized)"
    )
    vmas_scenario = PredatorPreyScenario


class PhysicalDeception(VmasScenario):
    """Physical deception on VMAS; same definition as ``mpe/physical_deception``."""

    Options: ClassVar[type[ScenarioOptions]] = PhysicalDeceptionOptions
    scenario: ClassVar[str] = "physical_deception"
    summary: ClassVar[str] = (
        "M-1 good agents cover a known target; 1 adversary guesses (vectorized)"
    )
    vmas_scenario = PhysicalDeceptionScenario

    def world_arguments(self) -> dict[str, Any]:
        options = self.options
        assert isinstance(options, PhysicalDeceptionOptions)
        return {
            "agents": options.agents,
            "landmarks": options.num_landmarks,
            "continuous": options.continuous_actions,
            "observe_velocity": options.observe_velocity,
        }

    def group_map(self) -> dict[str, list[str]]:
        # The adversary comes first in the world, as in mpe2's simple_adversary.
        return {
            "adversary": ["adversary_0"],
            "agent": [f"agent_{i}" for i in range(self.options.agents - 1)],
        }


class KeepAway(VmasScenario):
    """Keep-away on VMAS; same definition as ``mpe/keep_away``."""

    Options: ClassVar[type[ScenarioOptions]] = KeepAwayOptions
    scenario: ClassVar[str] = "keep_away"
    summary: ClassVar[str] = (
        "M-K good agents reach a known target; K adversaries block (vectorized)"
    )
    vmas_scenario = KeepAwayScenario
