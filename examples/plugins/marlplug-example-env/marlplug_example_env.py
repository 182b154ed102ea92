"""Example marlplug env plugin: PettingZoo/mpe2's ``simple_formation`` as ``pettingzoo/formation``."""

from collections.abc import Mapping
from typing import Any

from mpe2 import simple_formation_v1
from pydantic import Field
from torchrl.envs import EnvBase, PettingZooWrapper, SerialEnv

import marlplug
from marlplug.envs import EnvScenario, ScenarioOptions


class FormationOptions(ScenarioOptions):  # must subclass ScenarioOptions: agents, max_steps, ...
    agents: int = Field(4, ge=2, description="Agents that form a circle around the landmark.")


class Formation(EnvScenario):
    """M agents arrange themselves in a circle of radius 0.5 around a landmark (mpe2)."""

    Options = FormationOptions
    scenario = "formation"
    backend = "pettingzoo"
    summary = "M agents form a circle around a landmark (PettingZoo mpe2 simple_formation)"

    def _one_env(self, device: str) -> EnvBase:
        parallel_env = simple_formation_v1.parallel_env(
            N=self.options.agents,
            max_cycles=self.options.max_steps,
            continuous_actions=self.options.continuous_actions,
            render_mode="rgb_array",  # marlplug.envs.render_frame draws from it
        )
        return PettingZooWrapper(parallel_env, categorical_actions=True, device=device)

    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        if num_envs == 1:
            env = self._one_env(device)
        else:
            env = SerialEnv(num_envs, lambda: self._one_env(device), device=device)
            env.start()
            env.group_map = dict(env._envs[0].group_map)  # SerialEnv would give one per copy
        if seed is not None:
            env.set_seed(seed)
        return env


@marlplug.hookimpl
def marlplug_envs() -> Mapping[str, Any]:
    return {"pettingzoo/formation": Formation}
