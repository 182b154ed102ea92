"""Environments: the scenario contract, ``make_env``, the mpe backend and rendering helpers."""

from marlplug.envs.factory import available_envs, get_scenario, make_env
from marlplug.envs.options import AdversarialOptions, ScenarioOptions
from marlplug.envs.render import render_frame, rollout_frames
from marlplug.envs.scenario import EnvScenario
from marlplug.envs.scripted import scripted_rewards

__all__ = [
    "AdversarialOptions",
    "EnvScenario",
    "ScenarioOptions",
    "available_envs",
    "get_scenario",
    "make_env",
    "render_frame",
    "rollout_frames",
    "scripted_rewards",
]
