"""Environments: the scenario contract, ``make_env``, the mpe backend, rendering helpers, reference
policies and evaluation."""

from marlplug.envs.evaluate import EvaluationResult, evaluate, normalized_score
from marlplug.envs.factory import available_envs, get_scenario, make_env
from marlplug.envs.options import AdversarialOptions, ScenarioOptions
from marlplug.envs.policies import Policy, random_policy, reference_policy, scripted_policy
from marlplug.envs.render import render_frame, rollout_frames
from marlplug.envs.scenario import EnvScenario
from marlplug.envs.scripted import scripted_rewards

__all__ = [
    "AdversarialOptions",
    "EnvScenario",
    "EvaluationResult",
    "Policy",
    "ScenarioOptions",
    "available_envs",
    "evaluate",
    "get_scenario",
    "make_env",
    "normalized_score",
    "random_policy",
    "reference_policy",
    "render_frame",
    "rollout_frames",
    "scripted_policy",
    "scripted_rewards",
]
