"""What a run remembers across its iterations and its resumes, and how ``checkpoint.pt`` holds it.

:class:`RunState` keeps, beside the :class:`~marlplug.train.loop.Training` it wraps, the return
history, the last :data:`TIMELINE_ROUNDS` round logs, the periodic evaluations, the wall-time budget
and the run's notes; :meth:`RunState.save` writes all of it with the training state to the
checkpoint and :meth:`RunState.restore` puts it back, so a resumed run goes on bit-identically.
:mod:`marlplug.train.orchestrator` drives the iterations; this module only remembers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from marlplug.config import MarlplugConfig, resolved_dict
from marlplug.distributed.rounds import RoundLog
from marlplug.runs.checkpoint import (
    AGENTS_KEY,
    CHECKPOINT_NAME,
    CONFIG_KEY,
    EVALUATIONS_KEY,
    TRAINING_KEY,
    check_agents,
    config_changes,
    load_checkpoint,
    restore_rng_states,
    restore_state,
    save_checkpoint,
)
from marlplug.runs.evaluations import (
    EvaluationPoint,
    evaluations_for_checkpoint,
    evaluations_from_checkpoint,
)
from marlplug.runs.iteration_report import IterationLog
from marlplug.runs.kept_checkpoints import keep_checkpoint
from marlplug.runs.stats import ReturnPoint, history_for_checkpoint, history_from_checkpoint
from marlplug.train.budget import WallBudget
from marlplug.train.loop import Training

#: The checkpoint entry holding the return history (:class:`ReturnPoint` rows, for the curve).
HISTORY_KEY = "history"
#: The checkpoint entry holding the last :data:`TIMELINE_ROUNDS` rounds (for ``timeline.png``).
ROUND_LOGS_KEY = "round_logs"
#: The checkpoint entry holding the run's wall time up to it (``train.max_minutes`` across resumes).
WALL_SECONDS_KEY = "wall_seconds"
#: timeline.png shows the last this many rounds (hundreds of rounds side by side are unreadable;
#: rounds.csv has them all), so the checkpoint keeps no more.
TIMELINE_ROUNDS = 40


def resume_checkpoint(folder: Path, agent_names: list[str]) -> dict[str, Any] | None:
    """The checkpoint of the run in ``folder``, checked against this config's agents; ``None`` for a
    run killed before its first checkpoint (it starts over).

    Raises:
        UserError: the file is not a checkpoint marlplug can resume, or was trained with other
            agents (:func:`~marlplug.runs.checkpoint.check_agents`).
    """
    checkpoint = folder / CHECKPOINT_NAME
    if not checkpoint.exists():
        return None
    state = load_checkpoint(checkpoint, required=(TRAINING_KEY,))
    check_agents(state, agent_names, checkpoint, "--resume")
    return state


@dataclass
class RunState:
    """A run's memory around its ``training``: what its checkpoint holds besides the training
    state, written by :meth:`save` and put back by :meth:`restore`.

    The wall-time budget's clock (``train.max_minutes``) starts when the state is made.

    Examples:
        >>> import tempfile
        >>> import torch
        >>> from marlplug.config import load_config
        >>> from marlplug.train.components import learner_algorithm, training_env
        >>> from marlplug.train.executors import make_executor
        >>> from marlplug.runs.iteration_report import iteration_returns
        >>> config = load_config(overrides=["env.agents=2", "algorithm.hidden_size=8",
        ...     "algorithm.feature_dim=8", "train.rollout_steps=25", "train.minibatch_size=25"])
        >>> env, algorithm = training_env(config), learner_algorithm(config)
        >>> program = algorithm.bind(env, config)
        >>> source = algorithm.rollouts(env, program, config)
        >>> def training() -> Training:
        ...     return Training(program, source, make_executor(config, program),
        ...                     agent_names=["agent_0", "agent_1"], seed=config.seed)
        >>> folder = Path(tempfile.mkdtemp())
        >>> state = RunState(config, training(), folder / CHECKPOINT_NAME)
        >>> log = state.training.step()
        >>> state.remember(log, iteration_returns(log, program.num_agents))  # an episode ended
        >>> state.save()
        >>> resumed = RunState(config, training(), folder / CHECKPOINT_NAME)
        >>> resumed.restore(resume_checkpoint(folder, ["agent_0", "agent_1"]))
        >>> resumed.training.iterations, len(resumed.history), resumed.saved
        (1, 1, True)
        >>> resumed.history == state.history, torch.equal(resumed.training.theta, state.training.theta)
        (True, True)
        >>> source.close(); env.close()
    """

    config: MarlplugConfig
    training: Training
    #: Where :meth:`save` writes (``checkpoint.pt`` in the run folder).
    checkpoint: Path
    #: Lines for the run's result, e.g. why the evaluation stopped; not checkpointed.
    notes: list[str] = field(default_factory=list)
    #: The mean returns, one per iteration in which an episode ended, over the whole run.
    history: list[ReturnPoint] = field(default_factory=list)
    #: The last :data:`TIMELINE_ROUNDS` rounds (coded runs: the timeline's; centralized: empty).
    round_logs: list[RoundLog] = field(default_factory=list)
    evaluations: list[EvaluationPoint] = field(default_factory=list)
    #: The iteration the checkpoint on disk holds (``None``: none written by this process yet).
    saved_iteration: int | None = None
    budget: WallBudget = field(init=False)

    def __post_init__(self) -> None:
        self.budget = WallBudget(self.config.train.max_minutes)

    @property
    def saved(self) -> bool:
        """Whether the checkpoint on disk holds the training's latest iteration."""
        return self.saved_iteration == self.training.iterations

    def remember(self, log: IterationLog, returns: ReturnPoint | None) -> None:
        """Keep an iteration's rounds (the last :data:`TIMELINE_ROUNDS`) and its return, if any."""
        self.round_logs = [*self.round_logs, *log.round_logs][-TIMELINE_ROUNDS:]
        if returns is not None:
            self.history.append(returns)

    def restore(self, loaded: Mapping[str, Any]) -> None:
        """Put a checkpoint's entries back (``loaded``: :func:`resume_checkpoint`'s); one line
        naming the config fields changed since it was written when its rows do not fit.

        Raises:
            UserError: the stored state does not fit this config's networks.
        """

        def restore() -> None:
            self.training.load_state_dict(loaded[TRAINING_KEY])
            self.history.extend(
                history_from_checkpoint(
                    loaded.get(HISTORY_KEY, []),
                    num_agents=self.training.program.num_agents,
                    legacy_is_team=True,  # MADDPG stored the sum over agents
                )
            )
            self.round_logs.extend(RoundLog(**entry) for entry in loaded.get(ROUND_LOGS_KEY, []))
            self.evaluations.extend(evaluations_from_checkpoint(loaded.get(EVALUATIONS_KEY, [])))
            # Older checkpoints have no wall time: their runs count from this resume.
            self.budget.earlier_s = float(loaded.get(WALL_SECONDS_KEY, 0.0))
            restore_rng_states(loaded["rng"])  # last: replaying the env may have drawn from them

        changes = config_changes(loaded.get(CONFIG_KEY), self.config)
        restore_state(restore, self.checkpoint, "--resume", changes=changes)
        self.saved_iteration = self.training.iterations

    def save(self) -> None:
        """Write the training state and everything above to :attr:`checkpoint`, atomically, and keep
        a copy when :meth:`keeps` says so."""
        save_checkpoint(
            self.checkpoint,
            {
                TRAINING_KEY: self.training.state_dict(),
                AGENTS_KEY: self.training.agent_names,
                HISTORY_KEY: history_for_checkpoint(self.history),
                ROUND_LOGS_KEY: [dataclasses.asdict(entry) for entry in self.round_logs],
                EVALUATIONS_KEY: evaluations_for_checkpoint(self.evaluations),
                CONFIG_KEY: resolved_dict(self.config),
                WALL_SECONDS_KEY: self.budget.elapsed_s(),
            },
        )
        self.saved_iteration = self.training.iterations
        if self.keeps(self.saved_iteration):
            keep_checkpoint(self.checkpoint, self.saved_iteration)

    def keeps(self, iteration: int) -> bool:
        """Whether the checkpoint of ``iteration`` is kept beside the latest
        (``train.keep_checkpoint_every``)."""
        every = self.config.train.keep_checkpoint_every
        return every is not None and every > 0 and iteration % every == 0
