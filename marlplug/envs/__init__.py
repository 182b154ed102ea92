"""Environments as marlplug sees them: TorchRL multi-agent envs with agent groups as nested keys.

- the scenario contract (:class:`EnvScenario`, :class:`ScenarioOptions`) and :func:`make_env`, which
  builds a registered scenario (the ``mpe`` backend's are in ``mpe/``; ``vmas`` is a plugin);
- :func:`read_layout`, the one reader of an env's agent layout (groups, agents, sizes, action kinds)
  in the documented flat agent order, and :class:`MultiAgentEnvAdapter`, which steps an env with
  flat ``[E, M, ...]`` tensors for off-policy learners;
- :class:`JointEnv`, the surface for your own non-TorchRL environment, :class:`JointEnvWrapper`,
  which makes one a TorchRL env every trainer takes, and :class:`JointEnvCopies`, which batches
  copies of one;
- rendering (:func:`render_frame`, :func:`rollout_frames`) and scripted situations
  (:func:`scripted_rewards`) for tests and docs;
- reference policies (:func:`random_policy`, :func:`scripted_policy`) and :func:`evaluate`, which
  scores any policy on fixed evaluation seeds.
"""

from marlplug.envs.evaluate import EvaluationResult, evaluate, normalized_score
from marlplug.envs.factory import available_envs, get_scenario, make_env
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.envs.joint import JointEnv, JointEnvWrapper, JointStepResult
from marlplug.envs.joint_copies import JointEnvCopies
from marlplug.envs.layout import AgentLayout, EnvLayout, GroupLayout, read_layout
from marlplug.envs.options import AdversarialOptions, EntityOrderOptions, ScenarioOptions
from marlplug.envs.policies import Policy, random_policy, reference_policy, scripted_policy
from marlplug.envs.render import render_frame, rollout_frames
from marlplug.envs.scenario import EnvScenario
from marlplug.envs.scripted import scripted_rewards

__all__ = [
    "AdversarialOptions",
    "AgentLayout",
    "EntityOrderOptions",
    "EnvLayout",
    "EnvScenario",
    "EvaluationResult",
    "GroupLayout",
    "JointEnv",
    "JointEnvCopies",
    "JointEnvWrapper",
    "JointStepResult",
    "MultiAgentEnvAdapter",
    "Policy",
    "ScenarioOptions",
    "available_envs",
    "evaluate",
    "get_scenario",
    "make_env",
    "normalized_score",
    "random_policy",
    "read_layout",
    "reference_policy",
    "render_frame",
    "rollout_frames",
    "scripted_policy",
    "scripted_rewards",
]
