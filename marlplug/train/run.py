"""A whole training run from a config: build env, losses and trainer; log, checkpoint, plot, resume."""

from __future__ import annotations

import csv
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from marlplug.algorithms.ppo import PPO
from marlplug.config import MarlplugConfig
from marlplug.config.train import JointTrainerConfig
from marlplug.errors import ConfigError, UserError
from marlplug.plugins import get_component
from marlplug.runs.checkpoint import (
    AGENTS_KEY,
    CHECKPOINT_NAME,
    MODEL_KEY,
    check_agents,
    load_checkpoint,
    restore_rng_states,
    restore_state,
    save_checkpoint,
)
from marlplug.runs.interrupt import TrainingInterrupted, stop_requests
from marlplug.runs.metrics_files import make_logger, restart_rounds_csv
from marlplug.runs.nonfinite import warn_nonfinite
from marlplug.runs.reporting import ProgressBar
from marlplug.runs.run_config import kept_checkpoint, new_run_dir, save_run_config
from marlplug.runs.run_folder import hold_run_dir, storage_errors
from marlplug.runs.stats import (
    JointStats,
    ReturnPoint,
    history_for_checkpoint,
    history_from_checkpoint,
)
from marlplug.runs.summary import RunTotals, plot_learning_curve
from marlplug.train.executors import build_controller
from marlplug.train.trainer import JointMultiAgentTrainer

HISTORY_KEY = "history"
#: Coded PPO runs log every round (one per minibatch step) here, in the run folder.
ROUNDS_CSV_NAME = "rounds.csv"
#: A coded PPO checkpoint's round count (``CodedPpoStep.state_dict``).
CODED_STEP_KEY = "coded_step"


@dataclass
class RunResult(RunTotals):
    """Where a run's outputs went and how it ended."""

    run_dir: Path
    checkpoint: Path
    metrics_dir: Path
    learning_curve: Path
    rounds_csv: Path | None = None
    history: list[ReturnPoint] = field(default_factory=list)
    last_stats: JointStats | None = None
    frames: int = 0
    seconds: float = 0.0
    total_frames: int = 0
    completed: int = 0
    notes: list[str] = field(default_factory=list)
    #: Agent steps skipped for non-finite losses in this session, in one line (None: none).
    nonfinite: str | None = None


def build_trainer(config: MarlplugConfig) -> JointMultiAgentTrainer:
    """The env, algorithm, losses and trainer a config describes.

    A ``coding:`` section is a :class:`UserError` here: :func:`run_training` builds the trainer
    without it and then makes its steps coded rounds (:func:`attach_coded_steps`)."""
    if config.coding is not None:
        raise UserError(
            "coding: build_trainer builds the joint trainer in one process; coded PPO runs through "
            "run_training (marlplug train), which attaches the coded learners"
        )
    from marlplug.envs import make_env

    algorithm_cls = get_component("algorithm", config.algorithm.name, field="algorithm.name")
    if not issubclass(algorithm_cls, PPO):
        raise ConfigError(
            f"algorithm.name: the joint trainer runs 'ppo'; '{config.algorithm.name}' is not supported here"
        )
    algorithm = algorithm_cls(**config.algorithm.options.model_dump())
    clip_ppo: dict[str, Any] | None = None
    aux_losses: dict[str, nn.Module] = {}
    for index, spec in enumerate(config.losses):
        options = spec.options.model_dump()
        if spec.name == "clip_ppo":
            clip_ppo = options
            continue
        loss_cls = get_component("loss", spec.name, field=f"losses[{index}].name")
        aux_losses[spec.name] = loss_cls(**options)
    if clip_ppo is None:
        raise ConfigError(
            "losses: the joint trainer needs a 'clip_ppo' entry; add {name: clip_ppo}"
        )
    if config.train.torch_threads is not None:
        torch.set_num_threads(config.train.torch_threads)
    env = make_env(
        config.env.name,
        backend=config.env.backend,
        num_envs=config.train.num_envs,
        seed=config.seed,
        **config.env.options.model_dump(),
    )
    trainer_config = JointTrainerConfig.from_sections(config.train, clip_ppo, seed=config.seed)
    return JointMultiAgentTrainer(
        env,
        config=trainer_config,
        algorithm=algorithm,
        aux_losses=aux_losses,
        loss_critic_type=clip_ppo.get("loss_critic_type", "l2"),
    )


def attach_coded_steps(config: MarlplugConfig, trainer: JointMultiAgentTrainer) -> Any:
    """Make every minibatch step of ``trainer`` one coded round on ``config.coding``'s learners.

    Returns the controller (close it when done) and the step (its ``round_logs``)."""
    from marlplug.algorithms.ppo_coded import CodedPpoStep, PpoCodedProgram

    program = PpoCodedProgram(
        trainer.algorithm,
        trainer.loss,
        lr=trainer.config.lr,
        max_grad_norm=trainer.config.max_grad_norm,
    )
    controller = build_controller(config, program)
    step = CodedPpoStep(program, controller, trainer.loss, trainer.optimizer)
    trainer.step_function = step
    return controller, step


def _rounds_columns() -> list[str]:
    """The header of a coded PPO run's ``rounds.csv``: the update a round belongs to, then the
    round's record (``RoundLog.as_row``)."""
    from marlplug.distributed.controller import ROUND_ROW_COLUMNS

    return ["update", *ROUND_ROW_COLUMNS]


def _restart_coded_rounds(
    coded_step: Any, path: Path, state: dict[str, Any] | None, update_index: int
) -> None:
    """Start ``rounds.csv`` at the checkpoint (``update_index`` updates done, none for a fresh run)
    and continue the step's round count from it.

    Rows of later updates were written after the last checkpoint, and the resumed run does those
    updates again. A checkpoint written before the round count was stored counts the kept rows.
    """
    kept = restart_rounds_csv(path, _rounds_columns(), update_index + 1, key="update")
    saved = None if state is None else state.get(CODED_STEP_KEY)
    coded_step.load_state_dict(saved if saved is not None else {"rounds": kept})


def _append_rounds(path: Path, update: int, logs: list[Any]) -> None:
    """Append the rounds of update ``update`` (1-based) to ``rounds.csv``."""
    with path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=_rounds_columns())
        writer.writerows({"update": update, **log.as_row()} for log in logs)


def run_training(
    config: MarlplugConfig,
    *,
    resume_dir: Path | None = None,
    progress: bool | None = None,
    updates: int | None = None,
) -> RunResult:
    """Train as ``config`` says; with ``resume_dir``, continue that run from its checkpoint.

    Args:
        config: the run's config (for a resume, the one stored in the run folder).
        resume_dir: a run folder with a checkpoint to continue.
        progress: show a progress bar (default: ``config.logging.progress``).
        updates: stop after this many updates in total (default: ``config.train.updates``).
    """
    with ExitStack() as stack:
        trainer = build_trainer(config.model_copy(update={"coding": None}))
        stack.callback(trainer.close)
        coded_step: Any = None
        if config.coding is not None:
            controller, coded_step = attach_coded_steps(config, trainer)
            stack.callback(controller.close)
        return _run(config, trainer, coded_step, resume_dir, progress, updates)
    raise AssertionError("unreachable")  # pragma: no cover


def _run(
    config: MarlplugConfig,
    trainer: JointMultiAgentTrainer,
    coded_step: Any,
    resume_dir: Path | None,
    progress: bool | None,
    updates: int | None,
) -> RunResult:
    with ExitStack() as stack:
        history: list[ReturnPoint] = []
        state: dict[str, Any] | None = None
        if resume_dir is not None:
            run_dir = resume_dir
            stack.enter_context(hold_run_dir(run_dir))
            if (run_dir / CHECKPOINT_NAME).exists():  # else: killed before its first checkpoint
                state = _resume(trainer, run_dir / CHECKPOINT_NAME)
                history = state[HISTORY_KEY]
            with storage_errors(run_dir, lambda: kept_checkpoint(run_dir / CHECKPOINT_NAME)):
                save_run_config(run_dir, config)  # keeps this resume's --set overrides
        else:
            run_dir = new_run_dir(config)
            stack.enter_context(hold_run_dir(run_dir))
            with storage_errors(run_dir, lambda: kept_checkpoint(run_dir / CHECKPOINT_NAME)):
                save_run_config(run_dir, config)
        return _loop(config, trainer, coded_step, run_dir, state, history, progress, updates)
    raise AssertionError("unreachable")  # pragma: no cover


def _resume(trainer: JointMultiAgentTrainer, path: Path) -> dict[str, Any]:
    """Load ``path`` into ``trainer`` and the RNGs; a checkpoint that does not fit is one line."""
    state = load_checkpoint(path, required=("trainer",))
    check_agents(state, trainer.agent_names, path, "--resume")

    def restore() -> None:
        trainer.load_state_dict(state["trainer"])
        state[HISTORY_KEY] = history_from_checkpoint(
            state.get(HISTORY_KEY, []),
            num_agents=len(trainer.agent_names),
            legacy_is_team=False,  # joint PPO stored the mean over agents
        )
        restore_rng_states(state["rng"])

    restore_state(restore, path, "--resume")
    return state


def _loop(
    config: MarlplugConfig,
    trainer: JointMultiAgentTrainer,
    coded_step: Any,
    run_dir: Path,
    state: dict[str, Any] | None,
    history: list[ReturnPoint],
    progress: bool | None,
    updates: int | None,
) -> RunResult:
    checkpoint = run_dir / CHECKPOINT_NAME
    saved_update = trainer.update_index if state is not None else None
    with storage_errors(run_dir, lambda: kept_checkpoint(checkpoint)):
        total_updates = updates or config.train.updates
        # Update u logs at step u: a run resumed after update K logs from step K + 1 on.
        logger = make_logger(config.logging.backend, run_dir, keep_before=trainer.update_index + 1)
        result = RunResult(
            run_dir=run_dir,
            checkpoint=checkpoint,
            metrics_dir=run_dir / "metrics",
            learning_curve=run_dir / "learning_curve.png",
            rounds_csv=run_dir / ROUNDS_CSV_NAME if coded_step is not None else None,
            history=history,
        )
        if coded_step is not None and result.rounds_csv is not None:
            _restart_coded_rounds(coded_step, result.rounds_csv, state, trainer.update_index)
        show = config.logging.progress if progress is None else progress
        start_frames, start = trainer.frames, time.perf_counter()

        def save() -> None:
            nonlocal saved_update
            saved = {
                "trainer": trainer.state_dict(),
                MODEL_KEY: trainer.model.state_dict(),
                AGENTS_KEY: trainer.agent_names,
                HISTORY_KEY: history_for_checkpoint(history),
            }
            if coded_step is not None:
                saved[CODED_STEP_KEY] = coded_step.state_dict()
            save_checkpoint(checkpoint, saved)
            saved_update = trainer.update_index

        with (
            stop_requests() as stop,
            ProgressBar(
                show, total_updates, trainer.update_index, latest=history[-1] if history else None
            ) as advance,
        ):
            while trainer.update_index < total_updates and not stop.requested:
                stats = trainer.train_update()
                if coded_step is not None and result.rounds_csv is not None:
                    _append_rounds(result.rounds_csv, trainer.update_index, coded_step.round_logs)
                    coded_step.round_logs.clear()
                for name, value in stats.flat().items():
                    logger.log_scalar(name, value, step=trainer.update_index)
                if stats.returns is not None:
                    history.append(stats.returns)
                if stats.nonfinite_agent_steps:
                    warn_nonfinite(
                        f"update {trainer.update_index}",
                        stats.nonfinite_agent_steps,
                        stats.skipped_nonfinite,
                        stats.minibatch_steps * len(trainer.agent_names),
                        stats.nonfinite_terms,
                    )
                result.last_stats = stats
                if (
                    trainer.update_index % config.train.checkpoint_every == 0
                    or trainer.update_index == total_updates
                ):
                    save()
                advance(stats.returns)
            if stop.signal_number is not None:
                if saved_update != trainer.update_index:
                    save()
                raise TrainingInterrupted(
                    stop.signal_number, trainer.update_index, checkpoint, run_dir
                )
        result.seconds = time.perf_counter() - start
        result.frames = trainer.frames - start_frames
        result.total_frames, result.completed = trainer.frames, trainer.update_index
        result.nonfinite = trainer.nonfinite.summary()
        plot_learning_curve(
            history,
            result.learning_curve,
            title=f"{config.env.name} ({config.env.backend})",
            num_agents=len(trainer.agent_names),
        )
    return result
