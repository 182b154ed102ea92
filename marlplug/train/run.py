"""Training from a config in Python: :func:`run_training` (what ``marlplug train`` runs, for every
learner algorithm, centralized or coded) and :func:`build_trainer` (joint PPO's in-process trainer,
for people who drive the updates themselves)."""

from __future__ import annotations

from pathlib import Path

from torch import nn

from marlplug.algorithms.ppo import PPO
from marlplug.config import MarlplugConfig
from marlplug.errors import ConfigError, UserError
from marlplug.losses.ppo_options import JointTrainerConfig
from marlplug.plugins import get_component
from marlplug.train.components import training_env
from marlplug.train.orchestrator import run
from marlplug.train.result import TrainResult
from marlplug.train.threads import set_torch_threads
from marlplug.train.trainer import JointMultiAgentTrainer

#: What :func:`run_training` returns (kept for callers of marlplug 0.1).
RunResult = TrainResult


def run_training(
    config: MarlplugConfig,
    *,
    resume_dir: Path | None = None,
    progress: bool | None = None,
    updates: int | None = None,
) -> TrainResult:
    """Train as ``config`` says; with ``resume_dir``, continue that run from its checkpoint.

    Args:
        config: the run's config (for a resume, the one stored in the run folder).
        resume_dir: a run folder with a checkpoint to continue.
        progress: show a progress bar (default: ``config.logging.progress``).
        updates: stop after this many iterations in total (default: ``config.train.updates``).

    Examples:
        >>> from marlplug import load_config
        >>> config = load_config(data={"train": {"updates": 1}})  # doctest: +SKIP
        >>> result = run_training(config)  # doctest: +SKIP
    """
    return run(config, iterations=updates, resume_dir=resume_dir, progress=progress)


def build_trainer(config: MarlplugConfig) -> JointMultiAgentTrainer:
    """The env, algorithm, losses and joint PPO trainer a config describes (in this process; a
    ``coding:`` section is refused: coded runs go through :func:`run_training`)."""
    if config.coding is not None:
        raise UserError(
            "coding: build_trainer builds the joint trainer in one process; coded runs go through "
            "run_training (marlplug train)"
        )
    algorithm_cls = get_component("algorithm", config.algorithm.name, field="algorithm.name")
    if not issubclass(algorithm_cls, PPO):
        raise ConfigError(
            f"algorithm.name: the joint trainer runs 'ppo'; '{config.algorithm.name}' trains "
            f"through run_training (marlplug train)"
        )
    algorithm = algorithm_cls(**config.algorithm.options.model_dump())
    aux_losses: dict[str, nn.Module] = {}
    for index, spec in enumerate(config.losses):
        loss_cls = get_component("loss", spec.name, field=f"losses[{index}].name")
        aux_losses[spec.name] = loss_cls(**spec.options.model_dump())
    set_torch_threads(config.train.torch_threads)
    env = training_env(config)
    trainer_config = JointTrainerConfig.from_sections(
        config.train, algorithm.loss_options, seed=config.seed
    )
    return JointMultiAgentTrainer(
        env,
        config=trainer_config,
        algorithm=algorithm,
        aux_losses=aux_losses,
        schedule=algorithm.schedule(config.train),
    )
