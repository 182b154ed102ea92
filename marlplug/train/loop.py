"""The generic training loop: a bound program, its rollout source and an executor, iteration by
iteration, for every learner algorithm, centralized or coded.

One iteration::

    for batch in source.batches(theta, iteration):      # collect, then this iteration's minibatches
        theta, opt_state = executor.update(...)           # one round: U for every agent
        (frozen agents keep their rows)
        source.sync(theta)                                # e.g. the critic for the next batch

:class:`Training` holds the state (``theta``, ``opt_state``, counters) and what a checkpoint needs to
resume bit-identically; :mod:`marlplug.train.orchestrator` wraps it with the run folder.

What the loop reads from the source's ``iteration_stats()`` after an iteration: ``env_steps`` (env
frames of the whole run), ``episode_return`` (the mean team return of the episodes that ended in
the iteration; NaN or absent: none ended) and ``collect_s`` (seconds spent collecting; absent: the
iteration's time outside the rounds). From the program's ``stats``: 0-d tensors are logged by name,
``[M]`` tensors per agent as ``agent/name`` (means over the iteration's rounds), and
:data:`NONFINITE_STAT` is counted: an iteration with non-finite values ends with one ``warning:``
line (naming the terms a program reports as ``nonfinite/<term>``), and ``train.max_nonfinite_steps``
rounds in a row stop the run (:class:`~marlplug.runs.nonfinite.NonfiniteLossError`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Mapping
from typing import Any, Protocol, runtime_checkable

import torch

from marlplug.algorithms.protocol import LearnerProgram, RolloutSource
from marlplug.distributed.rounds import RoundLog
from marlplug.runs.iteration_report import IterationLog
from marlplug.runs.nonfinite import (
    NonfiniteMonitor,
    NonfiniteTally,
    agent_flags,
    check_finite_states,
    named_terms,
    with_gradient,
)
from marlplug.train.executors import Executor

#: A per-agent statistic (``[len(agents)]`` bool) a program may report: the agents whose update met
#: non-finite values (and kept their rows). Counted, warned about and limited by
#: ``train.max_nonfinite_steps``.
NONFINITE_STAT = "nonfinite"
#: Per-agent flags a program may add for the warning: ``nonfinite/<term>`` marks the agents for which
#: ``<term>`` (a loss term) was not finite; a skipped agent no term names is reported as ``gradient``.
NONFINITE_TERM_PREFIX = "nonfinite/"
#: A per-agent flag: false where the agent kept its rows (a skipped step, counted as such).
STEPPED_STAT = "stepped"


@runtime_checkable
class WaitingSource(Protocol):
    """A rollout source that may spend iterations collecting before its first minibatch (a replay
    buffer filling up) and can say why, for the run's notes."""

    def waiting_note(self, iterations_done: int, *, coded: bool) -> str | None: ...

    def never_learned_note(self, *, coded: bool) -> str: ...


class Training:
    """``program`` trained on ``source``'s minibatches through ``executor``.

    Args:
        program: the bound learner program.
        source: its rollout source.
        executor: where rounds run (:mod:`marlplug.train.executors`).
        agent_names: every agent, in the program's row order (for messages).
        seed: the run's seed (initial state).
        max_nonfinite_steps: stop when an agent's update meets non-finite values this many rounds in
            a row (``None``: never).

    Examples:
        >>> training = Training(program, source, CentralizedExecutor(program, seed=0),
        ...                     agent_names=names, seed=0)  # doctest: +SKIP
        >>> log = training.step()  # doctest: +SKIP
    """

    def __init__(
        self,
        program: LearnerProgram,
        source: RolloutSource,
        executor: Executor,
        *,
        agent_names: list[str],
        seed: int,
        max_nonfinite_steps: int | None = None,
    ) -> None:
        self.program = program
        self.source = source
        self.executor = executor
        self.agent_names = agent_names
        self.theta, self.opt_state = program.init_state(seed)
        self.iterations = 0
        self.rounds = 0
        self.env_steps = 0
        self.frozen: set[int] = set()
        self.nonfinite = NonfiniteMonitor(agent_names, max_consecutive=max_nonfinite_steps)

    def freeze(self, agents: Collection[int]) -> None:
        """Keep these agents' rows as they are from now on (``[]``: unfreeze all)."""
        self.frozen = {int(agent) for agent in agents}

    def step(self) -> IterationLog:
        """One iteration: collect, then one round per minibatch the source yields."""
        start = time.perf_counter()
        update_s = 0.0
        round_logs: list[RoundLog] = []
        sums: dict[str, float] = {}
        rounds = 0
        where = f"iteration {self.iterations + 1}"
        tally = NonfiniteTally()
        for batch in self.source.batches(self.theta, self.iterations):
            round_start = time.perf_counter()
            result = self.executor.update(self.theta, self.opt_state, batch, self.rounds)
            theta, opt_state = result.theta, result.opt_state
            if self.frozen:
                keep = torch.tensor(sorted(self.frozen))
                theta, opt_state = theta.clone(), opt_state.clone()
                theta[keep], opt_state[keep] = self.theta[keep], self.opt_state[keep]
            # theta holds every agent's state: a NaN there is never learned away.
            check_finite_states(theta, self.agent_names, where=where)
            self.theta, self.opt_state = theta, opt_state
            self.rounds += 1
            rounds += 1
            self._record_stats(result.stats, sums, tally, f"{where}, round {rounds}")
            self.source.sync(self.theta)
            if result.log is not None:
                round_logs.append(result.log)
            update_s += time.perf_counter() - round_start
        tally.warn(where)
        stats = self.source.iteration_stats()
        self.env_steps = int(stats.get("env_steps", self.env_steps))
        collect_s = float(stats.get("collect_s", time.perf_counter() - start - update_s))
        log = IterationLog(
            iteration=self.iterations,
            env_steps=self.env_steps,
            episode_return=float(stats.get("episode_return", math.nan)),
            collect_s=collect_s,
            update_s=update_s,
            round=round_logs[-1] if round_logs else None,
            rounds=rounds,
            stats={name: total / rounds for name, total in sums.items()},
            round_logs=round_logs,
        )
        self.iterations += 1
        return log

    def _record_stats(
        self,
        stats: Mapping[str, torch.Tensor],
        sums: dict[str, float],
        tally: NonfiniteTally,
        where: str,
    ) -> None:
        """Add a round's joint scalars (``name``) and per-agent values (``agent/name``, every
        agent's, in row order) to ``sums``; count its non-finite agent updates."""
        if NONFINITE_STAT in stats:
            affected = agent_flags(stats[NONFINITE_STAT])
            stepped = stats.get(STEPPED_STAT)
            skipped = affected if stepped is None else affected & ~agent_flags(stepped)
            masks = {
                name.removeprefix(NONFINITE_TERM_PREFIX): value
                for name, value in stats.items()
                if name.startswith(NONFINITE_TERM_PREFIX)
            }
            terms = with_gradient(named_terms(masks, self.agent_names), skipped, self.agent_names)
            tally.add(affected, skipped, terms)
            self.nonfinite.record(affected, terms, where=where)
        for name, value in stats.items():
            if name == NONFINITE_STAT or name.startswith(NONFINITE_TERM_PREFIX):
                continue
            if value.dim() == 0:
                sums[name] = sums.get(name, 0.0) + float(value)
            elif value.shape == (len(self.agent_names),):
                for agent, item in zip(self.agent_names, value.tolist(), strict=True):
                    sums[f"{agent}/{name}"] = sums.get(f"{agent}/{name}", 0.0) + float(item)

    def state_dict(self) -> dict[str, Any]:
        """The state, the counters and the source's state (plain data, for a checkpoint)."""
        return {
            "theta": self.theta.clone(),
            "opt_state": self.opt_state.clone(),
            "source": self.source.state_dict(),
            "counters": {
                "iterations": self.iterations,
                "rounds": self.rounds,
                "env_steps": self.env_steps,
            },
            "frozen": sorted(self.frozen),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output (the executor skips the rounds already run).

        Raises:
            ValueError: the stored rows have another shape than this program's (other network
                sizes or agents); :func:`~marlplug.runs.checkpoint.restore_state` makes it one line.
        """
        for key, current, what in (
            ("theta", self.theta, "parameters"),
            ("opt_state", self.opt_state, "optimizer state"),
        ):
            stored = state[key]
            if stored.shape != current.shape:
                raise ValueError(
                    f"size mismatch for the agents' {what}: {tuple(stored.shape)} (agents, values "
                    f"per agent) in the checkpoint, {tuple(current.shape)} for this config's "
                    f"networks"
                )
        self.theta, self.opt_state = state["theta"].clone(), state["opt_state"].clone()
        counters = state["counters"]
        self.iterations = int(counters["iterations"])
        self.rounds = int(counters["rounds"])
        self.env_steps = int(counters["env_steps"])
        self.frozen = set(state.get("frozen", []))
        self.source.load_state_dict(state["source"])
        self.executor.skip_rounds(self.rounds)
