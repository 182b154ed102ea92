"""One training run from a config, for every learner algorithm, centralized or coded.

The algorithm (hook ``marlplug_algorithms``) is used only through its protocol
(:mod:`marlplug.algorithms.protocol`): ``program = algorithm.bind(env, config)``,
``source = algorithm.rollouts(env, program, config)``; a ``coding:`` section makes every round run on
coded learners (:mod:`marlplug.train.executors`), otherwise every agent updates in this process.
:class:`~marlplug.train.loop.Training` runs the iterations; this module drives them and owns the
run folder around them: ``config.yaml``, ``checkpoint.pt`` (every ``train.checkpoint_every``
iterations and at the end; resumed bit-identically; what it holds and how it is put back:
:mod:`marlplug.train.run_state`), ``metrics/`` (TorchRL logger; or a W&B or MLflow run with the
config, metrics and plots, :mod:`marlplug.runs.trackers`), ``rounds.csv`` (one row per coded round,
with its iteration's columns; one row per iteration for a centralized run), periodic evaluations
(``train.eval_every``: :mod:`marlplug.train.evaluation`, logged as ``eval_return``/``eval_score``
and drawn on the curve), ``learning_curve.png`` and, for coded runs, ``timeline.png`` (the last
:data:`~marlplug.train.run_state.TIMELINE_ROUNDS` rounds); the progress bar, Ctrl-C, the run-folder
lock and non-finite stops.
"""

from __future__ import annotations

import csv
import logging
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import torch

from marlplug.algorithms.protocol import LearnerAlgorithm
from marlplug.config import MarlplugConfig, resolved_dict
from marlplug.distributed.assignment import coded_assignment
from marlplug.distributed.controller import RoundTimeoutError
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.errors import UserError
from marlplug.runs.checkpoint import CHECKPOINT_NAME
from marlplug.runs.interrupt import TrainingInterrupted, stop_requests
from marlplug.runs.iteration_report import (
    IterationLog,
    iteration_returns,
    iteration_rows,
    log_iteration,
    rounds_columns,
)
from marlplug.runs.kept_checkpoints import KEPT_DIR
from marlplug.runs.metrics_files import open_run_logger, restart_rounds_csv
from marlplug.runs.reporting import ProgressBar
from marlplug.runs.run_config import kept_checkpoint, new_run_dir, save_run_config
from marlplug.runs.run_folder import hold_run_dir, storage_errors
from marlplug.runs.run_logger import RunLogger
from marlplug.runs.summary import plot_learning_curve
from marlplug.runs.timeline import plot_timeline, timeline_of_failed_run
from marlplug.train.components import learner_algorithm, training_env
from marlplug.train.evaluation import PeriodicEvaluation
from marlplug.train.executors import make_executor
from marlplug.train.loop import Training, WaitingSource
from marlplug.train.result import TrainResult
from marlplug.train.run_state import RunState, resume_checkpoint
from marlplug.train.threads import AutoThreads, set_torch_threads, thread_invariant

#: Notes such as "no coded round yet" go to stderr through Python's logging (WARNING level: shown
#: with no logging set up, and a library user can silence them).
_LOG = logging.getLogger("marlplug")

ROUNDS_NAME = "rounds.csv"
TIMELINE_NAME = "timeline.png"
LEARNING_CURVE_NAME = "learning_curve.png"


def run(
    config: MarlplugConfig,
    *,
    iterations: int | None = None,
    run_dir: str | Path | None = None,
    resume_dir: Path | None = None,
    progress: bool | None = None,
) -> TrainResult:
    """Train as ``config`` says: on coded learners with a ``coding:`` section, else centralized.

    Args:
        config: a validated config (``load_config``); for a resume, the one stored in the run folder.
        iterations: stop after this many iterations in total (default ``config.train.updates``).
        run_dir: the run folder (default: ``logging.dir/logging.run_name`` or a timestamp).
        resume_dir: a run folder with a checkpoint to continue; the result is bit-identical to a run
            never stopped.
        progress: show a progress bar (default: ``config.logging.progress``).

    Examples:
        >>> from marlplug import load_config
        >>> config = load_config(data={"algorithm": {"name": "maddpg"}})  # doctest: +SKIP
        >>> result = run(config, iterations=2)  # doctest: +SKIP
    """

    algorithm = learner_algorithm(config)
    # An algorithm that manages its own threads says so in its Options (MADDPG: one per update).
    ignored: frozenset[str] = getattr(config.algorithm.options, "ignored_train_fields", frozenset())
    threads = torch.get_num_threads()
    try:
        auto = None
        if "torch_threads" in ignored:
            # Such an algorithm sets the count of its own blocks of work (collection, updates); the
            # run's other work (replay, checks) gets one thread. With torch's default of one per
            # core, that work left a torch worker thread spinning, taking most of the second core:
            # two VDN runs side by side on 2 cores trained 4x slower each (11k env steps a minute
            # against 43k, LBF 10x10, 2-core Intel Xeon; alone, the same).
            torch.set_num_threads(1)
        elif config.train.torch_threads == "auto":
            # Chooses before every update, trying both sizes first; one thread for a run whose
            # result could depend on the count.
            auto = AutoThreads(invariant=thread_invariant(config))
        else:
            set_torch_threads(config.train.torch_threads)
        return _run(
            config,
            algorithm,
            total_iterations=iterations,
            run_dir=run_dir,
            resume_dir=resume_dir,
            progress=progress,
            auto_threads=auto,
        )
    finally:
        # The thread count is process-wide: a library call leaves it as it found it.
        torch.set_num_threads(threads)


def _run(
    config: MarlplugConfig,
    algorithm: LearnerAlgorithm,
    *,
    total_iterations: int | None,
    run_dir: str | Path | None,
    resume_dir: Path | None,
    progress: bool | None,
    auto_threads: AutoThreads | None = None,
) -> TrainResult:
    """:func:`run` with the thread count set (``auto_threads``: chosen again every update)."""
    env = training_env(config)
    agent_names = [agent.name for agent in MultiAgentEnvAdapter(env).agents]
    total = total_iterations if total_iterations is not None else config.train.updates
    with ExitStack() as stack:
        stack.callback(lambda: env.is_closed or env.close())  # the source may have closed it
        program = algorithm.bind(env, config)
        if config.coding is not None:  # refuse a code that cannot decode before the run folder
            coded_assignment(config.coding, program.num_agents, config.seed)
        source = algorithm.rollouts(env, program, config)
        stack.callback(source.close)
        loaded: dict[str, Any] | None = None
        if resume_dir is not None:
            folder = resume_dir
            stack.enter_context(hold_run_dir(folder))
            loaded = resume_checkpoint(folder, agent_names)
        else:
            folder = new_run_dir(config, run_dir)
            stack.enter_context(hold_run_dir(folder))
            with storage_errors(folder, lambda: kept_checkpoint(folder / CHECKPOINT_NAME)):
                save_run_config(folder, config)  # resumable even if the learners fail to start
        executor = make_executor(config, program)
        stack.callback(executor.close)
        notes: list[str] = []
        evaluation = PeriodicEvaluation.for_config(config, algorithm, notes)
        if evaluation is not None:
            stack.callback(evaluation.close)
        training = Training(
            program,
            source,
            executor,
            agent_names=agent_names,
            seed=config.seed,
            max_nonfinite_steps=config.train.max_nonfinite_steps,
        )
        state = RunState(config, training, folder / CHECKPOINT_NAME, notes=notes)
        run = _Run(state, folder, total, progress, evaluation)
        run.auto_threads = auto_threads
        return run.go(loaded)
    raise AssertionError("unreachable")  # pragma: no cover


class _Run:
    """The iterations around :class:`Training`: resume, iterate, log, evaluate, checkpoint, plot
    (what the run remembers, and how its checkpoint holds it: :class:`RunState`)."""

    def __init__(
        self,
        state: RunState,
        folder: Path,
        total: int,
        progress: bool | None,
        evaluation: PeriodicEvaluation | None = None,
    ) -> None:
        self.state = state
        self.config = config = state.config
        self.training = state.training
        self.evaluation = evaluation
        self.evaluation_s = 0.0
        self.folder = folder
        self.total = total
        self.show = config.logging.progress if progress is None else progress
        self.coded = config.coding is not None
        self.auto_threads: AutoThreads | None = None

    def go(self, loaded: dict[str, Any] | None) -> TrainResult:
        if loaded is not None:
            self.state.restore(loaded)
        checkpoint = self.state.checkpoint
        with storage_errors(self.folder, lambda: kept_checkpoint(checkpoint)):
            save_run_config(self.folder, self.config)  # a resume's --set overrides, too
            # Iteration i (0-based) logs at step i + 1 (log_iteration): a run resumed after K
            # iterations logs from step K + 1 on; W&B and MLflow continue the resumed run's own.
            with open_run_logger(
                self.config.logging,
                self.folder,
                keep_before=self.training.iterations + 1,
                resume=loaded is not None,
            ) as logger:
                logger.log_run_config(resolved_dict(self.config))
                return self._iterate(logger)
        raise AssertionError("unreachable")  # pragma: no cover

    def _iterate(self, logger: RunLogger) -> TrainResult:
        training, folder, state = self.training, self.folder, self.state
        result = TrainResult(
            theta=training.theta,
            opt_state=training.opt_state,
            iterations=[],
            run_dir=folder,
            checkpoint=state.checkpoint,
            metrics_dir=folder / "metrics",
            learning_curve=folder / LEARNING_CURVE_NAME,
            rounds_csv=folder / ROUNDS_NAME,
            timeline=folder / TIMELINE_NAME if self.coded else None,
            history=state.history,
            evaluations=state.evaluations,
        )
        columns = rounds_columns(coded=self.coded)
        restart_rounds_csv(result.rounds_csv, columns, training.iterations)
        self._note_waiting()
        start_steps, start = training.env_steps, time.perf_counter()
        latest = state.history[-1] if state.history else None
        # Every call trains at least one update, unless a resumed run's earlier parts spent it all.
        out_of_time = self._out_of_time(earlier_only=True)
        resumed_spent = out_of_time
        with (
            stop_requests() as stop,
            ProgressBar(
                self.show,
                self.total,
                training.iterations,
                latest=latest,
                seconds_left=state.budget.seconds_left,
            ) as advance,
            result.rounds_csv.open("a", newline="") as rows,
        ):
            writer = csv.DictWriter(rows, fieldnames=columns, restval="", extrasaction="ignore")
            while training.iterations < self.total and not stop.requested and not out_of_time:
                log = self._step()
                result.iterations.append(log)
                returns = iteration_returns(log, training.program.num_agents)
                log_iteration(logger, log, returns)
                writer.writerows(iteration_rows(log, returns, coded=self.coded))
                rows.flush()  # on disk before a checkpoint counts the iteration: a resume keeps them
                state.remember(log, returns)
                # Checked once per iteration, at its end: a run out of time ends here as a run
                # ends after train.updates (final evaluation and checkpoint).
                out_of_time = self._out_of_time()
                self._evaluate(logger, out_of_time=out_of_time)
                every = self.config.train.checkpoint_every
                if (
                    training.iterations % every == 0
                    or training.iterations == self.total
                    or out_of_time
                    or state.keeps(training.iterations)
                ):
                    state.save()
                advance(returns)
            if out_of_time:
                state.notes.append(
                    state.budget.stop_note(
                        update=training.iterations,
                        updates=self.config.train.updates,
                        before_resume=resumed_spent,
                    )
                )
            if stop.signal_number is not None:
                if not state.saved:
                    state.save()
                raise TrainingInterrupted(
                    stop.signal_number,
                    training.iterations,
                    state.checkpoint,
                    folder,
                )
        return self._finish(result, start_steps, time.perf_counter() - start, logger)

    def _out_of_time(self, *, earlier_only: bool = False) -> bool:
        """Whether ``train.max_minutes`` ends the run before ``train.updates`` (``earlier_only``:
        spent by the run's earlier parts, before this resume)."""
        budget = self.state.budget
        spent = budget.spent_before() if earlier_only else budget.spent()
        return spent and self.training.iterations < self.config.train.updates

    def _evaluate(self, logger: RunLogger, *, out_of_time: bool = False) -> None:
        """Evaluate the policy when ``train.eval_every`` says so, or for the last time when the
        run is ``out_of_time``; log it at the update's step."""
        training, evaluation = self.training, self.evaluation
        # The run's end is train.updates or its wall-time budget: a call stopped early
        # (run(iterations=...)) and resumed evaluates as a run never stopped.
        end = self.config.train.updates
        if evaluation is None or not (out_of_time or evaluation.due(training.iterations, end)):
            return
        start = time.perf_counter()
        try:
            point = evaluation(
                training.theta,
                update=training.iterations,
                frames=training.env_steps,
                final=out_of_time or training.iterations == end,
            )
        except UserError as error:  # e.g. episodes that never end: training goes on without it
            self.evaluation = None
            self.state.notes.append(f"train.eval_every: evaluation stopped: {error}")
            return
        finally:
            self.evaluation_s += time.perf_counter() - start
        logger.log_metrics(point.as_metrics(), step=training.iterations)
        self.state.evaluations.append(point)

    def _note_waiting(self) -> None:
        """Say at the start when at least the next iteration will only collect (a replay buffer
        filling up before the first round)."""
        training, source = self.training, self.training.source
        if training.rounds > 0 or training.iterations >= self.total:
            return
        if isinstance(source, WaitingSource):
            note = source.waiting_note(training.iterations, coded=self.coded)
            if note is not None:
                _LOG.warning("note: %s; this run stops at iteration %d", note, self.total)

    def _step(self) -> IterationLog:
        auto = self.auto_threads
        if auto is not None:  # a neighbour may have started or ended since the last update
            auto.choose()
        start = time.perf_counter()
        try:
            log = self.training.step()
        except RoundTimeoutError as error:  # one line, and the timeline up to the failed round
            if self.config.coding is None:
                raise
            raise timeline_of_failed_run(
                error,
                self.state.round_logs,
                self.folder / TIMELINE_NAME,
                num_learners=self.config.coding.learners,
            ) from None
        if auto is not None:
            auto.timed(time.perf_counter() - start)
        return log

    def _finish(
        self, result: TrainResult, start_steps: int, seconds: float, logger: RunLogger
    ) -> TrainResult:
        training, config, state = self.training, self.config, self.state
        result.seconds = seconds - self.evaluation_s
        result.evaluation_s = self.evaluation_s
        result.frames = training.env_steps - start_steps
        result.total_frames, result.completed = training.env_steps, training.iterations
        result.nonfinite = training.nonfinite.summary()
        result.notes.extend(state.notes)
        if training.rounds == 0 and isinstance(training.source, WaitingSource):
            result.notes.append(training.source.never_learned_note(coded=self.coded))
        result.theta, result.opt_state = training.theta, training.opt_state
        title = f"{config.algorithm.name.upper()}, {config.env.name} ({config.env.backend})"
        if config.coding is not None:
            title += f", coded: {config.coding.scheme.name}, N={config.coding.learners}"
        plot_learning_curve(
            state.history,
            result.learning_curve,
            title=title,
            num_agents=training.program.num_agents,
            evaluations=state.evaluations,
        )
        if result.timeline is not None and config.coding is not None and state.round_logs:
            plot_timeline(state.round_logs, result.timeline, num_learners=config.coding.learners)
        else:
            result.timeline = None
        for plot in (result.learning_curve, result.timeline):
            if plot is not None:
                logger.log_image_file(plot)
        result.metrics_location = logger.location
        kept = self.folder / KEPT_DIR
        result.kept_checkpoints = kept if kept.is_dir() else None
        return result
