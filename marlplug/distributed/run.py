"""``run_coded``: a config with a ``coding:`` section trains MADDPG on N coded learners.

Builds the env, the learner algorithm, the coding scheme, the backend and the controller from the
config; logs every round (wait, decode and compute time, learners used) to ``rounds.csv`` and draws the
round timeline to ``timeline.png`` in the run folder.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from marlplug.algorithms.env_adapter import MultiAgentEnvAdapter
from marlplug.config import CodingSection, MarlplugConfig
from marlplug.distributed.backends.base import Backend
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController
from marlplug.distributed.stragglers import StragglerModel
from marlplug.distributed.timeline import plot_timeline
from marlplug.distributed.training import CentralizedUpdater, IterationLog, MaddpgRunner
from marlplug.errors import ConfigError
from marlplug.plugins import get_plugin_manager


@dataclass
class CodedRunResult:
    """What a coded run leaves behind."""

    theta: torch.Tensor
    iterations: list[IterationLog]
    run_dir: Path


def make_backend(coding: CodingSection) -> Backend | None:
    """The learner backend a ``coding:`` section asks for (``None`` for the simulated clock)."""
    if coding.clock == "simulated":
        return None
    if coding.backend == "ray":
        from marlplug.distributed.backends.ray import RayBackend

        return RayBackend(coding.learners, address=coding.ray_address)
    return LocalBackend(coding.learners)


def build_controller(config: MarlplugConfig, program: Any) -> CodedController:
    """The coded controller for ``config.coding`` and an already bound ``program``."""
    coding = config.coding
    if coding is None:
        raise ConfigError("coding: this run has no coding section")
    registries = get_plugin_manager().registries
    scheme_class = registries["code"].get_component(coding.scheme.name, field="coding.scheme.name")
    scheme = scheme_class(**coding.scheme.options.model_dump())
    if coding.learners < program.num_agents:
        raise ConfigError(
            f"coding.learners: {coding.learners} learners cannot hold {program.num_agents} agents "
            f"(need N >= M)"
        )
    matrix = scheme.assignment_matrix(program.num_agents, coding.learners, config.seed)
    stragglers = StragglerModel.from_config(coding.stragglers, seed=config.seed)
    return CodedController(
        program,
        matrix,
        make_backend(coding),
        scheme=scheme,
        stragglers=stragglers,
        clock=coding.clock,
        round_timeout_s=coding.round_timeout_s,
        seed=config.seed,
    )


def run_coded(
    config: MarlplugConfig, *, iterations: int | None = None, run_dir: str | Path | None = None
) -> CodedRunResult:
    """Train with coded learners as ``config`` says and write the round log and timeline.

    Args:
        config: a validated config (``load_config``) with a ``coding:`` section; the algorithm must
            be a coded learner algorithm (``maddpg``).
        iterations: how many iterations (default ``config.train.updates``).
        run_dir: where to write ``rounds.csv`` and ``timeline.png`` (default: under
            ``config.logging.dir``).

    Examples:
        >>> from marlplug import load_config
        >>> config = load_config(data={"algorithm": {"name": "maddpg"},
        ...     "coding": {"scheme": "mds", "learners": 4}})  # doctest: +SKIP
        >>> result = run_coded(config, iterations=2)  # doctest: +SKIP
    """
    if config.coding is None:
        raise ConfigError("coding: run_coded needs a coding section")
    return run_maddpg(config, iterations=iterations, run_dir=run_dir)


def run_maddpg(
    config: MarlplugConfig, *, iterations: int | None = None, run_dir: str | Path | None = None
) -> CodedRunResult:
    """MADDPG as ``config`` says: on coded learners with a ``coding:`` section, else centralized.

    Takes the same arguments as :func:`run_coded`; a centralized run writes ``rounds.csv`` too (without
    the per-round coding columns) and no timeline.
    """
    from marlplug.envs import make_env

    registries = get_plugin_manager().registries
    algorithm_class = registries["algorithm"].get_component(config.algorithm.name, field="algorithm.name")
    if not hasattr(algorithm_class, "bind"):
        raise ConfigError(
            f"algorithm.name: '{config.algorithm.name}' has no off-policy runner here; use maddpg"
        )
    algorithm = algorithm_class(**config.algorithm.options.model_dump())
    env_options = config.env.options.model_dump()
    env = make_env(config.env.name, backend=config.env.backend, seed=config.seed, **env_options)
    program = algorithm.bind(MultiAgentEnvAdapter(env).agents)
    folder = Path(run_dir) if run_dir is not None else (
        config.logging.dir / (config.logging.run_name or time.strftime("coded-%Y%m%d-%H%M%S"))
    )
    folder.mkdir(parents=True, exist_ok=True)
    count = iterations if iterations is not None else config.train.updates
    if config.coding is None:
        runner = MaddpgRunner(env, program, CentralizedUpdater(program, seed=config.seed), seed=config.seed)
        logs = runner.run(count)
    else:
        with build_controller(config, program) as controller:
            runner = MaddpgRunner(env, program, controller, seed=config.seed)
            logs = runner.run(count)
    rows = [log.as_row() for log in logs]
    keys = list(dict.fromkeys(key for row in rows for key in row))
    with (folder / "rounds.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=keys, restval="")
        writer.writeheader()
        writer.writerows(rows)
    rounds = [log.round for log in logs if log.round is not None]
    if rounds and config.coding is not None:
        plot_timeline(rounds, folder / "timeline.png", num_learners=config.coding.learners)
    return CodedRunResult(theta=runner.theta, iterations=logs, run_dir=folder)
