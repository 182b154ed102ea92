"""Run a sweep: every planned run as its own ``marlplug train`` process (``jobs`` at once), then
``marlplug evaluate`` on its final policy; the results file is rewritten after each finished run.

Nothing is lost to an interruption: Ctrl-C (or SIGTERM) passes one SIGTERM to every training
process, which finishes its update and writes its checkpoint; the same command again skips the
finished runs and resumes the others from their checkpoints (``marlplug train --resume``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marlplug.errors import UserError
from marlplug.experiments.plan import PlannedRun
from marlplug.experiments.results import (
    CurvePoint,
    FinalEvaluation,
    RunResult,
    SweepResults,
)
from marlplug.runs.checkpoint import CHECKPOINT_NAME
from marlplug.runs.machine import cpu_model
from marlplug.runs.reporting import stderr_progress
from marlplug.runs.trained_run import TrainedRun
from marlplug.train.threads import CPU_SHARE_ENV, cpu_share

#: The results file inside a sweep's folder.
RESULTS_NAME = "results.json"


@dataclass(frozen=True)
class EvaluationSettings:
    """How each run's final policy is evaluated (``marlplug evaluate``)."""

    episodes: int = 100
    backend: str | None = None
    """``None``: the run's ``train.eval_backend``, else its own backend."""


class RunFailed(Exception):
    """A run's process exited with an error; the message names its log."""


class _RunStopped(Exception):
    """A run's process stopped (or was not started) because the sweep is stopping."""


class SweepInterrupted(KeyboardInterrupt):
    """The sweep stopped on Ctrl-C or SIGTERM after saving every finished run.

    Examples:
        >>> SweepInterrupted("stopped").exit_status
        130
    """

    exit_status = 130


class SweepRunner:
    """Runs the planned runs of one sweep folder.

    Args:
        out: the sweep's folder: ``results.json``, ``runs/<configuration>/seed-<seed>/`` (run
            folders) and ``logs/`` (each run's output).
        config_path: the config file every run trains (``None``: the packaged default).
        evaluation: how final policies are evaluated.
        echo: where a line per finished run goes.
    """

    def __init__(
        self,
        out: Path,
        *,
        config_path: Path | None,
        evaluation: EvaluationSettings,
        echo: Callable[[str], None],
    ) -> None:
        self.out, self.config_path, self.evaluation, self.echo = out, config_path, evaluation, echo
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._stopping = False
        #: Runs sharing the CPUs (CPU_SHARE_ENV for each run's ``train.torch_threads: auto``).
        self._share = cpu_share()

    def run_dir(self, run: PlannedRun) -> Path:
        return self.out / "runs" / run.configuration.folder / f"seed-{run.seed}"

    def log_path(self, run: PlannedRun) -> Path:
        return self.out / "logs" / f"{run.configuration.folder}-seed-{run.seed}.log"

    def run_all(
        self, results: SweepResults, planned: Sequence[PlannedRun], *, jobs: int
    ) -> SweepResults:
        """Run what ``results`` does not hold yet, ``jobs`` at once; return the results with them.

        Raises:
            SweepInterrupted: Ctrl-C or SIGTERM; every finished run is saved, every started one
                checkpointed.
            UserError: some runs failed (the others are saved); the message names their logs.
        """
        todo = [run for run in planned if not results.done(run.configuration.name, run.seed)]
        # Each run starts on its share of the CPUs (a sweep run beside the user's own share).
        self._share = cpu_share() * max(1, min(jobs, len(todo)))
        results_path = self.out / RESULTS_NAME
        results.save(results_path)
        failures: list[str] = []
        done = len(planned) - len(todo)
        if done:
            self.echo(f"sweep: {done} of {len(planned)} runs already done in {results_path}")
        restore = _forward_termination()
        try:
            with (
                stderr_progress(len(planned), label="sweep") as progress,
                ThreadPoolExecutor(max_workers=jobs) as pool,
            ):
                progress.advance(steps=done)
                pending: dict[Future[RunResult], PlannedRun] = {
                    pool.submit(self.run_one, run): run for run in todo
                }
                try:
                    while pending:
                        finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                        for future in finished:
                            run = pending.pop(future)
                            try:
                                result = future.result()
                            except _RunStopped:
                                continue
                            except Exception as failure:  # one run fails, not the sweep
                                # RunFailed names the run's log; anything else (a results file
                                # that does not read) is a bug, reported with the run's key.
                                message = (
                                    str(failure)
                                    if isinstance(failure, RunFailed)
                                    else f"{run.key}: {type(failure).__name__}: {failure}"
                                )
                                failures.append(message)
                                self.echo(f"failed: {message}")
                                progress.advance(f"{run.key} failed")
                                continue
                            results = results.with_run(result)
                            results.save(results_path)
                            done += 1
                            self.echo(f"[{done}/{len(planned)}] {describe(result)}")
                            progress.advance(run.key)
                except KeyboardInterrupt:
                    # Leaving the pool waits for its threads: stop their processes first.
                    self.stop()
                    pool.shutdown(wait=False, cancel_futures=True)
                    self._wait_for_processes()
        finally:
            restore()
        if self._stopping:
            raise SweepInterrupted(
                f"sweep interrupted: {done} of {len(planned)} runs done and saved in "
                f"{results_path}; the same command again resumes the others from their "
                f"checkpoints"
            )
        if failures:
            raise UserError(
                f"sweep: {len(failures)} of {len(planned)} runs failed (the other results are "
                f"in {results_path}): " + "; ".join(failures)
            )
        return results

    def stop(self) -> None:
        """Ask every training process to checkpoint and stop; start no new one."""
        with self._lock:
            self._stopping = True
            for process in self._processes:
                if process.poll() is None:
                    # SIGTERM, not SIGINT: a process started in the background inherits an
                    # ignored SIGINT until marlplug train installs its handlers.
                    process.send_signal(signal.SIGTERM)

    def _wait_for_processes(self) -> None:
        """Let the stopped training processes write their checkpoints before the sweep exits."""
        while True:
            with self._lock:
                running = [p for p in self._processes if p.poll() is None]
            if not running:
                return
            try:
                running[0].wait()
            except KeyboardInterrupt:  # a second Ctrl-C: stop them now, as `train` does
                self.stop()

    def run_one(self, run: PlannedRun) -> RunResult:
        """Train ``run`` (or resume it from its checkpoint), evaluate it, read its curve."""
        run_dir = self.run_dir(run)
        resumed = (run_dir / CHECKPOINT_NAME).is_file()
        if resumed:
            train_args = ["train", "--resume", str(run_dir)]
        else:
            if run_dir.exists():  # a run stopped before its first checkpoint: start it again
                shutil.rmtree(run_dir)
            config = [] if self.config_path is None else [str(self.config_path)]
            train_args = ["train", *config]
            for assignment in [
                *run.overrides(),
                f"logging.dir={run_dir.parent}",
                f"logging.run_name={run_dir.name}",
            ]:
                train_args += ["--set", assignment]
        started = time.monotonic()
        self._marlplug(run, [*train_args, "--no-progress"])
        wall_seconds = time.monotonic() - started
        evaluate_args = [
            "evaluate",
            str(run_dir),
            "--json",
            "--episodes",
            str(self.evaluation.episodes),
        ]
        backend = self.evaluation.backend or run.config.train.eval_backend
        if backend is not None:
            evaluate_args += ["--backend", backend]
        report = json.loads(self._marlplug(run, evaluate_args, capture=True))
        trained = TrainedRun.find(run_dir)
        return RunResult(
            configuration=run.configuration.name,
            seed=run.seed,
            run_dir=str(run_dir.relative_to(self.out)),
            updates=trained.updates or 0,
            frames=trained.frames or 0,
            wall_seconds=round(wall_seconds, 2),
            resumed=resumed,
            evaluation=FinalEvaluation(
                backend=report["backend"],
                episodes=report["episodes"],
                seed=report["seed"],
                mean=report["mean"],
                std=report["std"],
                score=report.get("score"),
                group_means=report["group_means"],
            ),
            curve=[
                CurvePoint(update=p.update, frames=p.frames, mean=p.mean, score=p.score)
                for p in trained.evaluations
            ],
            cpu=cpu_model(),
        )

    def _marlplug(self, run: PlannedRun, args: list[str], *, capture: bool = False) -> str:
        """Run ``marlplug ARGS`` for ``run`` (its output appended to the run's log); return its
        stdout when ``capture``."""
        log = self.log_path(run)
        log.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "marlplug.cli.main", *args]
        with log.open("ab") as stream:
            stream.write(f"$ marlplug {' '.join(args)}\n".encode())
            stream.flush()
            with self._lock:
                if self._stopping:
                    raise _RunStopped
                # A session of its own: a Ctrl-C in the terminal reaches the sweep alone, which
                # passes exactly one signal on (two would stop training without its checkpoint).
                process = subprocess.Popen(
                    command,
                    stdout=subprocess.PIPE if capture else stream,
                    stderr=stream,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    env={**os.environ, CPU_SHARE_ENV: str(self._share)},
                )
                self._processes.add(process)
            try:
                stdout, _ = process.communicate()
            finally:
                with self._lock:
                    self._processes.discard(process)
        if self._stopping:
            raise _RunStopped
        if process.returncode != 0:
            raise RunFailed(
                f"{run.key}: marlplug {args[0]} exited with status {process.returncode}; "
                f"its output is in {log}{_last_line(log)}"
            )
        return stdout.decode() if capture else ""


def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return f" (last line: {lines[-1].strip()[:200]})" if lines else ""


def _forward_termination() -> Callable[[], None]:
    """Make SIGINT and SIGTERM stop the sweep (a SIGINT that the shell set to be ignored, as for a
    background job, included); return what puts the old handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)

    return restore


def describe(result: RunResult) -> str:
    """One line for a finished run.

    Examples:
        >>> from marlplug.experiments.results import FinalEvaluation, RunResult
        >>> evaluation = FinalEvaluation(backend="mpe", episodes=100, seed=1, mean=-33.0, std=9.0, score=0.78)
        >>> describe(RunResult(configuration="base", seed=2, run_dir="runs/base/seed-2", updates=100,
        ...     frames=3000000, wall_seconds=170.0, evaluation=evaluation))
        'base/seed-2: return -33.00 ± 9.00, score 0.780 (100 mpe episodes; 3000000 frames in 170 s)'
    """
    evaluation = result.evaluation
    score = "" if evaluation.score is None else f", score {evaluation.score:.3f}"
    return (
        f"{result.configuration}/seed-{result.seed}: return {evaluation.mean:.2f} ± "
        f"{evaluation.std:.2f}{score} ({evaluation.episodes} {evaluation.backend} episodes; "
        f"{result.frames} frames in {result.wall_seconds:.0f} s{' since resuming' if result.resumed else ''})"
    )
