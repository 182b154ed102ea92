"""The components a run builds from its config: the training env and the learner algorithm (a
one-line error for an unknown name or an algorithm without the protocol)."""

from __future__ import annotations

from typing import Any

from torchrl.envs import EnvBase

from marlplug.algorithms.protocol import LearnerAlgorithm
from marlplug.config import MarlplugConfig
from marlplug.errors import ConfigError
from marlplug.plugins import get_component


def training_env(config: MarlplugConfig) -> EnvBase:
    """The env a run trains on: ``train.num_envs`` copies (run as ``env.copies`` says) seeded with
    the run's seed, writing the global state when the algorithm reads it."""
    from marlplug.envs import make_env

    return make_env(
        config.env.name,
        backend=config.env.backend,
        num_envs=config.train.num_envs,
        seed=config.seed,
        global_state=config.algorithm.uses_global_state,
        copies=config.env.copies,
        **config.env.options.model_dump(),
    )


def configured_algorithm(config: MarlplugConfig) -> Any:
    """The configured algorithm, built from its options (a one-line error for an unknown name)."""
    cls = get_component("algorithm", config.algorithm.name, field="algorithm.name")
    return cls(**config.algorithm.options.model_dump())


def implements_protocol(algorithm: Any) -> bool:
    """Whether ``algorithm`` provides the learner-algorithm protocol: ``bind`` and ``rollouts``."""
    return all(callable(getattr(algorithm, name, None)) for name in ("bind", "rollouts"))


def learner_algorithm(config: MarlplugConfig) -> LearnerAlgorithm:
    """The configured algorithm through its protocol, or a one-line error naming what it lacks."""
    algorithm = configured_algorithm(config)
    if not implements_protocol(algorithm):
        raise ConfigError(
            f"algorithm.name: '{config.algorithm.name}' does not implement bind(env, config) and "
            f"rollouts(env, program, config) (marlplug.algorithms.protocol)"
        )
    return algorithm
