"""Every hook a marlplug plugin can implement.

A plugin is a module (or object) exposed under the ``marlplug`` entry-point group whose functions are
marked with :data:`marlplug.hookimpl`. Each hook returns a mapping from component names to components;
names must be unique per kind across every installed plugin. A value may also be a
``"module:attribute"`` string: marlplug imports it when the component is first used, so a plugin whose
entry-point module imports nothing heavy keeps ``marlplug plugins`` and ``--help`` fast.

What the loader checks (:mod:`marlplug.plugins`, :mod:`marlplug.plugin_checks`): a hook must return a
mapping; each value must be a class whose ``Options`` (a pydantic model) has only fields its
constructor accepts, since components are built as ``cls(**options.model_dump())``; an env is an
:class:`marlplug.envs.EnvScenario` keyed ``"<backend>/<scenario>"`` whose ``Options`` subclasses
:class:`marlplug.envs.ScenarioOptions`. A component that fails a check, or whose name is taken
(built-ins load first, then plugins by entry-point name: the first one keeps the name), is skipped
and reported by ``marlplug plugins``; the plugin's other components still load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pluggy

PROJECT_NAME = "marlplug"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def marlplug_envs() -> Mapping[str, Any]:
    """Return environment scenario classes keyed by ``"<backend>/<scenario>"``.

    Called once when the registries are built. Each value subclasses
    :class:`marlplug.envs.EnvScenario`: it has an ``Options`` model subclassing
    :class:`marlplug.envs.ScenarioOptions`, takes those options as keyword arguments, and its
    ``make(num_envs=, seed=, device=)`` returns a TorchRL ``EnvBase`` whose agent groups
    (``"agent"``, ``"adversary"``) are nested keys, with one ``group_map`` dict (a ``SerialEnv``
    must set it from one copy). A plugin's env is rolled out once per process and options, on a
    separate copy, against its specs when first built: data that does not match is an error naming
    the env. A config selects one with ``env: {name: <scenario>, backend: <backend>}``.

    Example::

        @marlplug.hookimpl
        def marlplug_envs():
            return {"mpe/cooperative_navigation": CooperativeNavigation}
    """


@hookspec
def marlplug_codes() -> Mapping[str, Any]:
    """Return coding-scheme classes keyed by name (``"mds"``, ``"ldpc"``, ...).

    Called once when the registries are built. A scheme class has an ``Options`` pydantic model and,
    once built from those options, ``assignment_matrix(num_agents, num_learners, seed)`` returning an
    ``(N, M)`` float64 ``numpy.ndarray``. A config selects one with ``coding: {scheme: <name>}``.
    """


@hookspec
def marlplug_losses() -> Mapping[str, Any]:
    """Return auxiliary loss classes keyed by name (``"redundancy"``, ...).

    Called once when the registries are built. An auxiliary loss is an ``nn.Module`` with an
    ``Options`` pydantic model, called with ``features: list[Tensor]`` (one ``[B, d_i]`` tensor per
    agent, in the env's agent order) and returning a scalar tensor. Where agents die (a group has a
    dead-agent mask: MAgent2 battle) it is also passed ``alive: list[Tensor]``, one ``[B]`` bool per
    agent, True on the rows where that agent was in play, and should read each agent on those rows
    only; a loss without that parameter is refused there (``marlplug.losses.aux``). An optional
    ``diagnostics`` is called the same way. A config lists them under
    ``losses: [{name: <name>, ...options}]``.
    """


@hookspec
def marlplug_algorithms() -> Mapping[str, Any]:
    """Return learner algorithms keyed by name (``"ppo"``, ``"maddpg"``, ...).

    Called once when the registries are built. A learner algorithm implements
    :class:`marlplug.algorithms.protocol.LearnerAlgorithm`: an ``Options`` pydantic model (it is
    built as ``cls(**options.model_dump())``), ``bind(env, config)`` returning a
    :class:`~marlplug.algorithms.protocol.LearnerProgram` and ``rollouts(env, program, config)``
    returning a :class:`~marlplug.algorithms.protocol.RolloutSource`. The program's one batched,
    pure update ``update(theta_all, opt_state, batch, agents, seed) -> AgentUpdate`` runs with every
    agent in the joint trainer and with a learner's agents on coded learners. A config selects one
    with ``algorithm: {name: <name>}``; see docs/how-to/algorithm-plugin.md.
    """
