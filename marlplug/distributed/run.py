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
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import yaml

from marlplug.algorithms.env_adapter import MultiAgentEnvAdapter
from marlplug.config import CodingSection, MarlplugConfig, resolved_dict
from marlplug.distributed.assignment import coded_assignment
from marlplug.distributed.backends.base import Backend
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController, RoundLog, RoundTimeoutError
from marlplug.distributed.stragglers import StragglerModel
from marlplug.distributed.timeline import plot_timeline, timeline_of_failed_run
from marlplug.distributed.training import CentralizedUpdater, IterationLog, MaddpgRunner
from marlplug.errors import ConfigError, UserError
from marlplug.plugins import get_plugin_manager
from marlplug.train.checkpoint import (
    CHECKPOINT_NAME,
    load_checkpoint,
    restore_rng_states,
    save_checkpoint,
)
from marlplug.train.reporting import (
    ProgressBar,
    RunTotals,
    make_logger,
    plot_learning_curve,
    restart_rounds_csv,
)
from marlplug.train.run import CONFIG_NAME, HISTORY_KEY, new_run_dir

ROUNDS_NAME = "rounds.csv"
TIMELINE_NAME = "timeline.png"
LEARNING_CURVE_NAME = "learning_curve.png"
#: Marks a checkpoint as a MADDPG run's (a joint PPO checkpoint holds ``trainer`` instead).
RUNNER_KEY = "maddpg_runner"
ROUND_LOGS_KEY = "round_logs"
#: timeline.png shows the last this many rounds (hundreds of rounds side by side are unreadable;
#: rounds.csv has them all).
TIMELINE_ROUNDS = 40
#: rounds.csv columns of every run; coded runs add ``round_*`` columns (RoundLog.as_row, prefixed).
ITERATION_COLUMNS = ["iteration", "env_steps", "episode_return", "collect_s", "update_s"]
ROUND_COLUMNS = [
    "round_clock",
    "round_round_s",
    "round_wait_s",
    "round_decode_s",
    "round_compute_s_max",
    "round_learners_used",
    "round_stragglers",
    "round_failures",
    "round_redispatched_agents",
]


@dataclass
class CodedRunResult(RunTotals):
    """What a MADDPG run (coded or centralized) leaves behind, and where.

    ``iterations`` holds this call's iterations only (a resumed run's earlier ones are in
    ``rounds.csv``); ``history`` holds ``(env steps, mean episode return)`` over the whole run.
    """

    theta: torch.Tensor
    iterations: list[IterationLog]
    run_dir: Path
    checkpoint: Path | None = None
    metrics_dir: Path | None = None
    learning_curve: Path | None = None
    rounds_csv: Path | None = None
    timeline: Path | None = None
    history: list[tuple[int, float]] = field(default_factory=list)
    frames: int = 0
    seconds: float = 0.0


def uses_maddpg_runner(config: MarlplugConfig) -> bool:
    """Whether ``marlplug train`` runs ``config`` with :func:`run_maddpg` (an off-policy learner
    algorithm such as ``maddpg``, coded or not) rather than the joint PPO trainer (which runs coded
    PPO, one coded round per minibatch step, when there is a ``coding:`` section)."""
    registries = get_plugin_manager().registries
    algorithm_class = registries["algorithm"].get_component(
        config.algorithm.name, field="algorithm.name"
    )
    return hasattr(algorithm_class, "bind")


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
    registries = get_plugin_manager().registries
    algorithm_class = registries["algorithm"].get_component(
        config.algorithm.name, field="algorithm.name"
    )
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


def _run_folder(
    config: MarlplugConfig, run_dir: str | Path | None, resume_dir: Path | None
) -> Path:
    if resume_dir is not None:
        return resume_dir
    if run_dir is None:
        folder = new_run_dir(config)
    else:
        folder = Path(run_dir)
        if (folder / CHECKPOINT_NAME).exists():
            raise UserError(
                f"logging.run_name: {folder} already holds a run; use --resume {folder}"
            )
        folder.mkdir(parents=True, exist_ok=True)
    (folder / CONFIG_NAME).write_text(yaml.safe_dump(resolved_dict(config), sort_keys=False))
    return folder


def _log_iteration(logger: Any, log: IterationLog) -> None:
    step = log.iteration + 1
    logger.log_scalar("env_steps", float(log.env_steps), step=step)
    logger.log_scalar("collect_s", log.collect_s, step=step)
    logger.log_scalar("update_s", log.update_s, step=step)
    if not math.isnan(log.episode_return):
        logger.log_scalar("episode_return", log.episode_return, step=step)
    if log.round is not None:
        round_log = log.round
        logger.log_scalar("round_s", round_log.round_s, step=step)
        logger.log_scalar("round_wait_s", round_log.wait_s, step=step)
        logger.log_scalar("round_decode_s", round_log.decode_s, step=step)
        logger.log_scalar(
            "round_compute_s_max", max(round_log.compute_s.values(), default=0.0), step=step
        )
        logger.log_scalar("round_learners_used", float(len(round_log.learners_used)), step=step)
        logger.log_scalar("round_stragglers", float(len(round_log.stragglers)), step=step)
        logger.log_scalar("round_failures", float(len(round_log.failures)), step=step)


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
    program = algorithm.bind(MultiAgentEnvAdapter(env).agents)
    state: dict[str, Any] | None = None
    if resume_dir is not None:
        state = load_checkpoint(resume_dir / CHECKPOINT_NAME)
        if RUNNER_KEY not in state:
            raise UserError(
                f"--resume: {resume_dir / CHECKPOINT_NAME} is not a MADDPG run's checkpoint"
            )
    if config.coding is not None:  # refuse a code that cannot decode before the run folder exists
        coded_assignment(config.coding, program.num_agents, config.seed)
    folder = _run_folder(config, run_dir, resume_dir)
    total = iterations if iterations is not None else config.train.updates
    if config.coding is None:
        updater: Any = CentralizedUpdater(program, seed=config.seed)
        result = _train(config, env, program, updater, folder, total, state, progress)
    else:
        with build_controller(config, program) as controller:
            result = _train(config, env, program, controller, folder, total, state, progress)
    return result


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
    history: list[tuple[int, float]] = []
    round_logs: list[RoundLog] = []
    if state is not None:
        runner.load_state_dict(state[RUNNER_KEY])
        history = [(int(f), float(r)) for f, r in state.get(HISTORY_KEY, [])]
        round_logs = [RoundLog(**entry) for entry in state.get(ROUND_LOGS_KEY, [])]
        restore_rng_states(state["rng"])  # last: replaying the env may have drawn from them
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
    columns = ITERATION_COLUMNS + (ROUND_COLUMNS if coded else [])
    assert result.rounds_csv is not None and result.checkpoint is not None
    restart_rounds_csv(result.rounds_csv, columns, runner.iterations)
    # Iteration i (0-based) logs at step i + 1 (_log_iteration): a run resumed after K iterations
    # logs from step K + 1 on.
    logger = make_logger(config.logging.backend, folder, keep_before=runner.iterations + 1)
    show = config.logging.progress if progress is None else progress
    start_steps, start = runner.env_steps, time.perf_counter()
    with (
        ProgressBar(show, total, runner.iterations) as advance,
        result.rounds_csv.open("a", newline="") as rows,
    ):
        writer = csv.DictWriter(rows, fieldnames=columns, restval="", extrasaction="ignore")
        while runner.iterations < total:
            try:
                log = runner.step()
            except RoundTimeoutError as error:  # one line, and the timeline up to the failed round
                if config.coding is None or result.timeline is None:
                    raise
                learners = config.coding.learners
                raise timeline_of_failed_run(
                    error, round_logs, result.timeline, num_learners=learners
                ) from None
            result.iterations.append(log)
            _log_iteration(logger, log)
            writer.writerow(log.as_row())
            rows.flush()
            if log.round is not None:
                round_logs = [*round_logs[-(TIMELINE_ROUNDS - 1) :], log.round]
            if not math.isnan(log.episode_return):
                history.append((log.env_steps, log.episode_return))
            if runner.iterations % config.train.checkpoint_every == 0 or runner.iterations == total:
                save_checkpoint(
                    result.checkpoint,
                    {
                        RUNNER_KEY: runner.state_dict(),
                        HISTORY_KEY: history,
                        ROUND_LOGS_KEY: [dataclasses.asdict(entry) for entry in round_logs],
                    },
                )
            advance(log.episode_return)
    result.seconds = time.perf_counter() - start
    result.frames = runner.env_steps - start_steps
    result.theta = runner.theta
    title = f"MADDPG, {config.env.name} ({config.env.backend})" + (
        f", coded: {config.coding.scheme.name}, N={config.coding.learners}" if config.coding else ""
    )
    plot_learning_curve(history, result.learning_curve or folder / LEARNING_CURVE_NAME, title=title)
    if result.timeline is not None and config.coding is not None and round_logs:
        plot_timeline(round_logs, result.timeline, num_learners=config.coding.learners)
    elif result.timeline is not None:
        result.timeline = None
    return result
