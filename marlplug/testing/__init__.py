"""Reusable test suites for plugin authors: run them from pytest against your own components.

One contract per component kind (coding schemes, envs, auxiliary losses, learner algorithms), each as
a pytest base class and as a ``check_*`` function, plus :func:`register_plugin` to make an in-process
plugin visible to the registries for one test.
"""

from marlplug.testing.algorithms import (
    AlgorithmCase,
    AlgorithmContract,
    check_algorithm,
    rollout_case,
)
from marlplug.testing.codes import CodingSchemeContract, check_coding_scheme
from marlplug.testing.envs import EnvScenarioContract, check_env_scenario
from marlplug.testing.losses import AuxLossContract, check_aux_loss, make_features
from marlplug.testing.plugins import register_plugin

__all__ = [
    "AlgorithmCase",
    "AlgorithmContract",
    "AuxLossContract",
    "CodingSchemeContract",
    "EnvScenarioContract",
    "check_algorithm",
    "check_aux_loss",
    "check_coding_scheme",
    "check_env_scenario",
    "make_features",
    "register_plugin",
    "rollout_case",
]
