"""``run_maddpg``: MADDPG from a config, centralized or (with a ``coding:`` section) on N coded learners.

Builds the env, the learner algorithm, the coding scheme, the backend and the controller from the
config; shows a progress bar, logs every iteration through TorchRL's loggers and every round (wait,
decode and compute time, learners used) to ``rounds.csv``, checkpoints atomically every
``train.checkpoint_every`` iterations, resumes bit-identically, and draws ``learning_curve.png`` and,
for coded runs, the round timeline ``timeline.png`` in the run folder.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.row_bridge import runner_program
from marlplug.config import CodingSection, MarlplugConfig
from marlplug.distributed.assignment import coded_assignment
from marlplug.distributed.backends.base import Backend
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController, RoundLog, RoundTimeoutError
from marlplug.distributed.stragglers import StragglerModel
from marlplug.errors import ConfigError, UserError
from marlplug.plugins import get_plugin_manager
from marlplug.runs.checkpoint import (
    AGENTS_KEY,
    CHECKPOINT_NAME,
    check_agents,
    load_checkpoint,
    restore_rng_states,
    restore_state,
    save_checkpoint,
)
from marlplug.runs.interrupt import TrainingInterrupted, stop_requests
from marlplug.runs.iteration_report import (
    iteration_returns,
    iteration_row,
    learning_gate_note,
    log_iteration,
    rounds_columns,
)
from marlplug.runs.metrics_files import make_logger, restart_rounds_csv
from marlplug.runs.nonfinite import check_finite_states
from marlplug.runs.reporting import ProgressBar
from marlplug.runs.run_folder import claim_run_dir, hold_run_dir, storage_errors
from marlplug.runs.stats import (
    ReturnPoint,
    history_for_checkpoint,
    history_from_checkpoint,
)
from marlplug.runs.summary import RunTotals, plot_learning_curve
from marlplug.runs.timeline import plot_timeline, timeline_of_failed_run
from marlplug.train.maddpg_loop import CentralizedUpdater, IterationLog, MaddpgRunner
from marlplug.train.run import HISTORY_KEY, kept_checkpoint, new_run_dir, save_run_config

#: Notes such as "no coded round yet" go to stderr through Python's logging (WARNING level: shown
#: with no logging set up, and a library user can silence them).
_LOG = logging.getLogger("marlplug")

ROUNDS_NAME = "rounds.csv"
TIMELINE_NAME = "timeline.png"
LEARNING_CURVE_NAME = "learning_curve.png"
#: Marks a checkpoint as a MADDPG run's (a joint PPO checkpoint holds ``trainer`` instead).
RUNNER_KEY = "maddpg_runner"
ROUND_LOGS_KEY = "round_logs"
#: timeline.png shows the last this many rounds (hundreds of rounds side by side are unreadable;
#: rounds.csv has them all).
TIMELINE_ROUNDS = 40


@dataclass
class CodedRunResult(RunTotals):
    """What a MADDPG run (coded or centralized) leaves behind, and where.

    ``iterations`` holds this call's iterations only (a resumed run's earlier ones are in
    ``rounds.csv``); ``history`` holds the return (:class:`ReturnPoint`) over the whole run.
    """

    theta: torch.Tensor
    iterations: list[IterationLog]
    run_dir: Path
    checkpoint: Path | None = None
    metrics_dir: Path | None = None
    learning_curve: Path | None = None
    rounds_csv: Path | None = None
    timeline: Path | None = None
    history: list[ReturnPoint] = field(default_factory=list)
    frames: int = 0
    seconds: float = 0.0
    total_frames: int = 0
    completed: int = 0
    notes: list[str] = field(default_factory=list)


def uses_maddpg_runner(config: MarlplugConfig) -> bool:
    """Whether ``marlplug train`` runs ``config`` with :func:`run_maddpg` (an off-policy learner
    algorithm such as ``maddpg``, coded or not) rather than the joint PPO trainer (which runs coded
    PPO, one coded round per minibatch step, when there is a ``coding:`` section)."""
    algorithm_class = _algorithm_class(config)
    return hasattr(algorithm_class, "bind") and not issubclass(algorithm_class, PPO)


def _algorithm_class(config: MarlplugConfig) -> Any:
    """The configured learner algorithm's class, or a one-line unknown-name error."""
    registries = get_plugin_manager().registries
    return registries["algorithm"].get_component(config.algorithm.name, field="algorithm.name")


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
    scheme, matrix = coded_assignment(coding, program.num_agents, config.seed)
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
    """Train with coded learners as ``config`` says (see :func:`run_maddpg`, which this calls).

    Examples:
        >>> from marlplug import load_config
        >>> config = load_config(data={"algorithm": {"name": "maddpg"},
        ...     "coding": {"scheme": "mds", "learners": 4}})  # doctest: +SKIP
        >>> result = run_coded(config, iterations=2)  # doctest: +SKIP
    """
    if config.coding is None:
        raise ConfigError("coding: run_coded needs a coding section")
    return run_maddpg(config, iterations=iterations, run_dir=run_dir)


def _algorithm(config: MarlplugConfig) -> Any:
    """The configured off-policy learner algorithm (it has ``bind``), or a one-line error."""
    algorithm_class = _algorithm_class(config)
    if not hasattr(algorithm_class, "bind"):
        if config.coding is not None:
            raise UserError(
                f"algorithm.name: coded training (coding:) runs maddpg; '{config.algorithm.name}' is "
                f"not supported there (remove coding: to train it jointly)"
            )
        raise ConfigError(
            f"algorithm.name: '{config.algorithm.name}' has no off-policy runner here; use maddpg"
        )
    return algorithm_class(**config.algorithm.options.model_dump())


def _run_folder(config: MarlplugConfig, run_dir: str | Path | None) -> Path:
    """A new run's folder, created and claimed atomically, with its ``config.yaml``."""
    folder = new_run_dir(config) if run_dir is None else claim_run_dir(Path(run_dir))
    with storage_errors(folder, lambda: kept_checkpoint(folder / CHECKPOINT_NAME)):
        save_run_config(folder, config)
    return folder


def run_maddpg(
    config: MarlplugConfig,
    *,
    iterations: int | None = None,
    run_dir: str | Path | None = None,
    resume_dir: Path | None = None,
    progress: bool | None = None,
) -> CodedRunResult:
    """MADDPG as ``config`` says: on coded learners with a ``coding:`` section, else centralized.

    Args:
        config: a validated config (``load_config``); the algorithm must be an off-policy learner
            algorithm (``maddpg``). For a resume, the config stored in the run folder.
        iterations: stop after this many iterations in total (default ``config.train.updates``).
        run_dir: the run folder (default: ``logging.dir/logging.run_name`` or a timestamp).
        resume_dir: a run folder with a checkpoint to continue; the result is bit-identical to a run
            never stopped.
        progress: show a progress bar (default: ``config.logging.progress``).

    The run folder gets ``config.yaml``, ``checkpoint.pt`` (every ``train.checkpoint_every``
    iterations and at the end), ``metrics/`` (TorchRL logger), ``rounds.csv``, ``learning_curve.png``
    and, for coded runs, ``timeline.png`` (the last :data:`TIMELINE_ROUNDS` rounds).

    Examples:
        >>> from marlplug import load_config
        >>> config = load_config(data={"algorithm": {"name": "maddpg"}})  # doctest: +SKIP
        >>> result = run_maddpg(config, iterations=2)  # doctest: +SKIP
    """
    from marlplug.envs import make_env

    algorithm = _algorithm(config)
    env = make_env(
        config.env.name,
        backend=config.env.backend,
        seed=config.seed,
        **config.env.options.model_dump(),
    )
    program = runner_program(algorithm, env)
    if config.coding is not None:  # refuse a code that cannot decode before the run folder exists
        coded_assignment(config.coding, program.num_agents, config.seed)
    total = iterations if iterations is not None else config.train.updates
    with ExitStack() as stack:
        state: dict[str, Any] | None = None
        if resume_dir is not None:
            folder = resume_dir
            stack.enter_context(hold_run_dir(folder))
            checkpoint = folder / CHECKPOINT_NAME
            if checkpoint.exists():  # else: killed before its first checkpoint, start it over
                state = load_checkpoint(checkpoint, required=(RUNNER_KEY,))
                check_agents(
                    state, [agent.name for agent in program.agents], checkpoint, "--resume"
                )
        else:
            folder = _run_folder(config, run_dir)
            stack.enter_context(hold_run_dir(folder))
        if config.coding is None:
            updater: Any = CentralizedUpdater(program, seed=config.seed)
        else:
            updater = stack.enter_context(build_controller(config, program))
        return _train(config, env, program, updater, folder, total, state, progress)
    raise AssertionError("unreachable")  # pragma: no cover


def _train(
    config: MarlplugConfig,
    env: Any,
    program: Any,
    updater: Any,
    folder: Path,
    total: int,
    state: dict[str, Any] | None,
    progress: bool | None,
) -> CodedRunResult:
    runner = MaddpgRunner(env, program, updater, seed=config.seed)
    round_logs: list[RoundLog] = []
    history: list[ReturnPoint] = []
    checkpoint = folder / CHECKPOINT_NAME
    if state is not None:
        loaded = state

        def restore() -> None:
            runner.load_state_dict(loaded[RUNNER_KEY])
            history.extend(
                history_from_checkpoint(
                    loaded.get(HISTORY_KEY, []),
                    num_agents=program.num_agents,
                    legacy_is_team=True,  # MADDPG stored the sum over agents
                )
            )
            round_logs.extend(RoundLog(**entry) for entry in loaded.get(ROUND_LOGS_KEY, []))
            restore_rng_states(loaded["rng"])  # last: replaying the env may have drawn from them

        restore_state(restore, checkpoint, "--resume")
    with storage_errors(folder, lambda: kept_checkpoint(checkpoint)):
        save_run_config(folder, config)  # keeps a resume's --set overrides, checkpoint or not
        return _iterate(config, runner, folder, total, history, round_logs, progress, state)
    raise AssertionError("unreachable")  # pragma: no cover


def _iterate(
    config: MarlplugConfig,
    runner: MaddpgRunner,
    folder: Path,
    total: int,
    history: list[ReturnPoint],
    round_logs: list[RoundLog],
    progress: bool | None,
    state: dict[str, Any] | None,
) -> CodedRunResult:
    coded = config.coding is not None
    result = CodedRunResult(
        theta=runner.theta,
        iterations=[],
        run_dir=folder,
        checkpoint=folder / CHECKPOINT_NAME,
        metrics_dir=folder / "metrics",
        learning_curve=folder / LEARNING_CURVE_NAME,
        rounds_csv=folder / ROUNDS_NAME,
        timeline=folder / TIMELINE_NAME if coded else None,
        history=history,
    )
    columns = rounds_columns(coded=coded)
    assert result.rounds_csv is not None and result.checkpoint is not None
    restart_rounds_csv(result.rounds_csv, columns, runner.iterations)
    # Iteration i (0-based) logs at step i + 1 (log_iteration): a run resumed after K iterations
    # logs from step K + 1 on.
    logger = make_logger(config.logging.backend, folder, keep_before=runner.iterations + 1)
    show = config.logging.progress if progress is None else progress
    # Said at the start when at least the next iteration will only collect (never: first is None).
    first = runner.collector.first_learning_iteration()
    waits = first is None or first > runner.iterations + 1
    if runner.rounds == 0 and runner.iterations < total and waits:
        _LOG.warning(
            "note: %s; this run stops at iteration %d",
            learning_gate_note(runner.collector, coded=coded),
            total,
        )
    start_steps, start = runner.env_steps, time.perf_counter()
    saved_iteration = runner.iterations if state is not None else None
    agent_names = [agent.name for agent in runner.program.agents]

    def save() -> None:
        nonlocal saved_iteration
        assert result.checkpoint is not None
        save_checkpoint(
            result.checkpoint,
            {
                RUNNER_KEY: runner.state_dict(),
                AGENTS_KEY: agent_names,
                HISTORY_KEY: history_for_checkpoint(history),
                ROUND_LOGS_KEY: [dataclasses.asdict(entry) for entry in round_logs],
            },
        )
        saved_iteration = runner.iterations

    with (
        stop_requests() as stop,
        ProgressBar(
            show, total, runner.iterations, latest=history[-1] if history else None
        ) as advance,
        result.rounds_csv.open("a", newline="") as rows,
    ):
        writer = csv.DictWriter(rows, fieldnames=columns, restval="", extrasaction="ignore")
        while runner.iterations < total and not stop.requested:
            try:
                log = runner.step()
            except RoundTimeoutError as error:  # one line, and the timeline up to the failed round
                if config.coding is None or result.timeline is None:
                    raise
                learners = config.coding.learners
                raise timeline_of_failed_run(
                    error, round_logs, result.timeline, num_learners=learners
                ) from None
            # theta holds every agent's state: a NaN there is never learned away.
            check_finite_states(runner.theta, agent_names, where=f"iteration {log.iteration + 1}")
            result.iterations.append(log)
            returns = iteration_returns(log, runner.program.num_agents)
            log_iteration(logger, log, returns)
            writer.writerow(iteration_row(log, returns))
            rows.flush()
            if log.round is not None:
                round_logs = [*round_logs[-(TIMELINE_ROUNDS - 1) :], log.round]
            if returns is not None:
                history.append(returns)
            if runner.iterations % config.train.checkpoint_every == 0 or runner.iterations == total:
                save()
            advance(returns)
        if stop.signal_number is not None:
            if saved_iteration != runner.iterations:
                save()
            raise TrainingInterrupted(
                stop.signal_number, runner.iterations, result.checkpoint, folder, unit="iteration"
            )
    result.seconds = time.perf_counter() - start
    result.frames = runner.env_steps - start_steps
    result.total_frames, result.completed = runner.env_steps, runner.iterations
    if runner.rounds == 0:
        result.notes.append(learning_gate_note(runner.collector, coded=coded))
    result.theta = runner.theta
    title = f"MADDPG, {config.env.name} ({config.env.backend})" + (
        f", coded: {config.coding.scheme.name}, N={config.coding.learners}" if config.coding else ""
    )
    plot_learning_curve(
        history,
        result.learning_curve or folder / LEARNING_CURVE_NAME,
        title=title,
        num_agents=runner.program.num_agents,
        unit="iteration",
    )
    if result.timeline is not None and config.coding is not None and round_logs:
        plot_timeline(round_logs, result.timeline, num_learners=config.coding.learners)
    elif result.timeline is not None:
        result.timeline = None
    return result
