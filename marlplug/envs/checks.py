"""Checks on what an env plugin's ``make`` returns, so a broken env fails at build with its name.

Every env ``make_env`` builds must be a TorchRL ``EnvBase`` with one ``group_map`` dict. A plugin's
env (not marlplug's own, which its tests cover) also gets one short rollout of a separate copy against
its specs, once per process and options: a mismatch would otherwise surface as a reshape error deep
in the models, naming neither the env nor its plugin.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torchrl.envs import EnvBase
from torchrl.envs.batched_envs import BatchedEnvBase
from torchrl.envs.utils import check_env_specs

from marlplug.envs.scenario import EnvScenario
from marlplug.errors import PluginError
from marlplug.registry import Component

#: Distributions whose envs are trusted (tested in this repository): no rollout check at build.
TRUSTED_DISTRIBUTIONS = frozenset({"marlplug"})

# (registry key, options) already checked by a rollout in this process.
_checked: set[tuple[str, str]] = set()


def _where(component: Component) -> str:
    return (
        f"env '{component.name}' of plugin '{component.plugin}' "
        f"(distribution '{component.distribution}')"
    )


def check_env_object(env: object, component: Component) -> EnvBase:
    """``env`` if it is an ``EnvBase`` whose ``group_map`` maps group names to agent-name lists.

    Raises:
        PluginError: naming the env, its plugin and distribution, and the fix.
    """
    if not isinstance(env, EnvBase):
        raise PluginError(
            f"{_where(component)}: make() returned {type(env).__name__}, not a "
            f"torchrl.envs.EnvBase; return the TorchRL env"
        )
    try:
        group_map: Any = getattr(env, "group_map", None)
        got = type(group_map).__name__
    except Exception as exc:  # e.g. a SerialEnv that was not started recurses in __getattr__
        group_map, got = None, f"{type(exc).__name__} on reading it"
    valid = isinstance(group_map, Mapping) and all(
        isinstance(group, str)
        and isinstance(names, Sequence)
        and not isinstance(names, str)
        and all(isinstance(n, str) for n in names)
        for group, names in group_map.items()
    )
    if not valid or not group_map:
        batched = (
            " (a SerialEnv/ParallelEnv forwards it as one value per copy: start it and set "
            "env.group_map = dict(<one copy>.group_map) before returning it)"
            if isinstance(env, BatchedEnvBase) or isinstance(group_map, list)
            else ""
        )
        raise PluginError(
            f"{_where(component)}: env.group_map must be a dict of group name -> agent names, got "
            f"{got}{batched}"
        )
    return env


def check_specs_against_data(scenario: EnvScenario, component: Component) -> None:
    """Roll out a separate one-copy env for a few steps and compare its data with its specs.

    Global random states (torch, numpy, random) are restored afterwards, and the env the caller
    builds is not touched, so a seeded run is the same with or without this check.

    Raises:
        PluginError: naming the env, its plugin and distribution, the first mismatch and the fix.
    """
    if component.distribution in TRUSTED_DISTRIBUTIONS:
        return
    key = (component.name, json.dumps(scenario.options.model_dump(mode="json"), sort_keys=True))
    if key in _checked:
        return
    numpy_state, python_state = np.random.get_state(), random.getstate()
    # check_env_specs logs an INFO line on success, which would reach stdout.
    torchrl_logger = logging.getLogger("torchrl")
    level = torchrl_logger.level
    torchrl_logger.setLevel(max(level, logging.WARNING))
    probe: EnvBase | None = None
    try:
        with torch.random.fork_rng(devices=[]):
            probe = check_env_object(scenario.make(num_envs=1, seed=0), component)
            check_env_specs(probe)
    except PluginError:
        raise
    except Exception as exc:
        first = next((line for line in str(exc).splitlines() if line.strip()), "")
        raise PluginError(
            f"{_where(component)}: its data does not match its specs ({type(exc).__name__}: "
            f"{first.strip()}); make its observation/action/reward/done specs describe what "
            f"reset() and step() return (torchrl.envs.utils.check_env_specs(env) shows the details)"
        ) from exc
    finally:
        torchrl_logger.setLevel(level)
        np.random.set_state(numpy_state)
        random.setstate(python_state)
        if probe is not None and not probe.is_closed:
            probe.close()
    _checked.add(key)
