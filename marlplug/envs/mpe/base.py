"""The mpe backend: any mpe2 ``BaseScenario`` as a PettingZoo parallel env, wrapped for TorchRL.

``num_envs`` copies run in one process through TorchRL's ``SerialEnv``, or each in its own worker
process with ``env.copies: processes`` (:mod:`marlplug.envs.copies`; the same transitions).
"""

from __future__ import annotations

import warnings
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from mpe2._mpe_utils.core import World
from mpe2._mpe_utils.scenario import BaseScenario
from mpe2._mpe_utils.simple_env import SimpleEnv
from pettingzoo.utils import ParallelEnv, wrappers
from pettingzoo.utils.conversions import aec_to_parallel
from torchrl.envs import EnvBase, PettingZooWrapper, SerialEnv

from marlplug.envs.copies import serial_copies
from marlplug.envs.scenario import EnvScenario
from marlplug.errors import UserError


class ScenarioSimpleEnv(SimpleEnv):
    """mpe2's ``SimpleEnv`` around a ready scenario and world (mpe2's ``raw_env`` classes fix both).

    Args:
        scenario: the mpe2 scenario (rewards, observations, resets).
        world: the world it made.
        name: the environment name PettingZoo reports.
        max_cycles: episode length.
        continuous_actions: Box(0, 1, (5,)) actions instead of Discrete(5).
        local_ratio: weight of the per-agent reward against ``scenario.global_reward``; ``None``
            uses the per-agent reward alone.
        render_mode: ``"rgb_array"`` to allow :func:`marlplug.envs.render_frame`.
    """

    def __init__(
        self,
        *,
        scenario: BaseScenario,
        world: World,
        name: str,
        max_cycles: int,
        continuous_actions: bool,
        local_ratio: float | None = None,
        render_mode: str | None = "rgb_array",
    ) -> None:
        super().__init__(
            scenario=scenario,
            world=world,
            max_cycles=max_cycles,
            continuous_actions=continuous_actions,
            local_ratio=local_ratio,
            render_mode=render_mode,
        )
        self.metadata = {**SimpleEnv.metadata, "name": name}


class MpeScenario(EnvScenario):
    """Base class of the mpe-backend scenarios: subclasses say how to make the mpe2 scenario.

    Examples:
        >>> from marlplug.envs.mpe import CooperativeNavigation
        >>> env = CooperativeNavigation(agents=2).make(num_envs=2, seed=1)
        >>> env.batch_size
        torch.Size([2])
    """

    backend: ClassVar[str] = "mpe"
    #: ``local_ratio`` passed to mpe2 (``None``: each agent's own reward only).
    local_ratio: ClassVar[float | None] = None

    @abstractmethod
    def mpe_scenario(self) -> tuple[BaseScenario, World]:
        """A fresh mpe2 scenario and the world it made, sized by ``self.options``."""

    def parallel_env(self, *, render_mode: str | None = "rgb_array") -> ParallelEnv:
        """One PettingZoo parallel env of this scenario (what ``PettingZooWrapper`` wraps)."""
        scenario, world = self.mpe_scenario()
        aec: Any = ScenarioSimpleEnv(
            scenario=scenario,
            world=world,
            name=f"marlplug_{self.scenario}",
            max_cycles=self.options.max_steps,
            continuous_actions=self.options.continuous_actions,
            local_ratio=self.local_ratio,
            render_mode=render_mode,
        )
        if self.options.continuous_actions:
            aec = wrappers.ClipOutOfBoundsWrapper(aec)
        else:
            aec = wrappers.AssertOutOfBoundsWrapper(aec)
        return aec_to_parallel(wrappers.OrderEnforcingWrapper(aec))

    def _single(self, device: str) -> PettingZooWrapper:
        with warnings.catch_warnings():
            # TorchRL warns that it was tested with an older PettingZoo; mpe2 needs the newer one.
            warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
            return PettingZooWrapper(
                self.parallel_env(), categorical_actions=True, device=device, use_mask=False
            )

    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        return serial_copies(
            lambda: self._single(device), num_envs=num_envs, seed=seed, device=device
        )

    # ------------------------------------------------------------------ scripted situations

    @staticmethod
    def worlds(env: EnvBase) -> list[World]:
        """The mpe2 world of every copy in ``env`` (built by :meth:`make`), in batch order."""
        wrappers_: list[EnvBase] = list(env._envs) if isinstance(env, SerialEnv) else [env]
        if isinstance(env, SerialEnv) and not wrappers_:
            env.start()
            wrappers_ = list(env._envs)
        worlds = []
        for wrapper in wrappers_:
            if not isinstance(wrapper, PettingZooWrapper):
                raise UserError(f"not an mpe env built by marlplug: {type(wrapper).__name__}")
            worlds.append(wrapper._env.unwrapped.world)
        return worlds

    def place(
        self,
        env: EnvBase,
        *,
        agents: Mapping[str, Sequence[float]],
        landmarks: Sequence[Sequence[float]] = (),
        target: int | None = None,
    ) -> None:
        for world in self.worlds(env):
            by_name = {agent.name: agent for agent in world.agents}
            for name, position in agents.items():
                if name not in by_name:
                    raise UserError(f"no agent '{name}'; agents: {', '.join(by_name)}")
                by_name[name].state.p_pos = np.asarray(position, dtype=np.float64)
                by_name[name].state.p_vel = np.zeros(world.dim_p)
            for landmark, position in zip(world.landmarks, landmarks, strict=False):
                landmark.state.p_pos = np.asarray(position, dtype=np.float64)
            if target is not None:
                self._set_target(world, world.landmarks[target])

    def _set_target(self, world: World, landmark: Any) -> None:
        raise UserError(f"{self.scenario} has no target landmark")
