"""Periodic evaluation during training (``train.eval_every``, ``train.eval_episodes``,
``train.final_eval_episodes``): the current ``theta`` acts with deterministic actions on fixed
evaluation episodes of a separate env.

Evaluation leaves training exactly as it would be without it: it steps its own env (built by
:func:`~marlplug.envs.evaluate.evaluation_env`, never the training env), acts through its own bound
program (:func:`~marlplug.algorithms.acting.acting_policy`, the way ``marlplug evaluate`` loads a
checkpoint; no algorithm is special-cased), and restores torch's, numpy's and Python's global RNGs
after every use, so a run with evaluation gives the same ``theta`` bit for bit as one without.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from marlplug.algorithms.acting import FlatActing, ModuleActing, acting_policy
from marlplug.config import MarlplugConfig
from marlplug.envs.evaluate import (
    DEFAULT_EVALUATION_SEED,
    ReferenceReturns,
    evaluate,
    evaluation_env,
    reference_episode_returns,
    references_of_first,
)
from marlplug.errors import ConfigError
from marlplug.runs.checkpoint import restore_rng_states, rng_states
from marlplug.runs.evaluations import EvaluationPoint
from marlplug.train.threads import one_thread

#: Reference episodes already measured in this process (:meth:`PeriodicEvaluation.references`):
#: per key (scenario, backend, options, evaluation seed, env copies: the copies change the
#: episodes), the most episodes measured and their returns.
_REFERENCES: dict[tuple[str, str, str, int, int], tuple[int, dict[str, list[float]] | None]] = {}


class NoActingPolicy(ConfigError):
    """The algorithm's program cannot act, so there is nothing to evaluate."""


@contextmanager
def untouched_rng() -> Iterator[None]:
    """Run the block, then put torch's, numpy's and Python's global RNGs back as they were."""
    states = rng_states()
    try:
        yield
    finally:
        restore_rng_states(states)


class PeriodicEvaluation:
    """Evaluates ``theta`` every ``train.eval_every`` updates and after the last one.

    The episodes are those of ``marlplug evaluate RUN_DIR --episodes E`` (``train.eval_envs`` env
    copies, evaluation seed :data:`~marlplug.envs.evaluate.DEFAULT_EVALUATION_SEED`; with
    ``--backend`` set to ``train.eval_backend`` where the run sets it), E being ``train.eval_episodes``, or
    ``train.final_eval_episodes`` after the last update, so the run's final evaluation and that
    command agree. Where the scenario has a scripted policy, the random and scripted references are
    measured once per episode count on the same episodes and every evaluation carries its
    oracle-normalized score.

    Args:
        config: the run's config (its ``train.eval_every`` must be positive).
        algorithm: the run's learner algorithm (bound once more, to the evaluation env).

    Raises:
        ConfigError: the algorithm's program cannot act (no acting policy to evaluate);
            :meth:`for_config` turns that into no evaluation and a note.

    Examples:
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> from marlplug.config import load_config
        >>> config = load_config(data={"algorithm": {"name": "maddpg"}, "env": {"agents": 2},
        ...                            "train": {"eval_episodes": 2}})
        >>> evaluation = PeriodicEvaluation(config, MADDPG())
        >>> theta = evaluation.program.init_state(0)[0]
        >>> point = evaluation(theta, update=1, frames=25)
        >>> point.episodes, point.score is not None
        (2, True)
    """

    def __init__(self, config: MarlplugConfig, algorithm: Any) -> None:
        self.every = config.train.eval_every or 0
        self.episodes = config.train.eval_episodes
        self.final_episodes = config.train.final_eval_episodes or self.episodes
        self.seed = DEFAULT_EVALUATION_SEED
        with untouched_rng():  # building networks and envs may draw from the global RNGs
            self.backend = config.train.eval_backend or config.env.backend
            self.copies = config.train.eval_envs
            self.env = evaluation_env(config, backend=self.backend, num_envs=self.copies)
            self.program = algorithm.bind(self.env, config)
            if not isinstance(self.program, (ModuleActing, FlatActing)):
                self.env.close()
                raise NoActingPolicy(
                    f"train.eval_every: algorithm '{config.algorithm.name}' has no acting policy "
                    f"(marlplug.algorithms.acting), so the run was not evaluated; set "
                    f"train.eval_every=0 to say so"
                )
        self.scenario = config.env.name
        self.options = json.dumps(config.env.options.model_dump(mode="json"), sort_keys=True)

    def references(self, episodes: int) -> ReferenceReturns | None:
        """The references of this env's first ``episodes`` evaluation episodes, measured once per
        process: they depend only on the scenario, its options, the backend, the env copies and the
        episodes.
        The run's largest episode count is measured on first use (its first episodes are every
        smaller count's), so the periodic and the final evaluations share one measurement."""
        key = (self.scenario, self.backend, self.options, self.seed, self.copies)
        measured, returns = _REFERENCES.get(key, (0, None))
        if measured < episodes:
            measured = max(episodes, self.episodes, self.final_episodes)
            with untouched_rng():
                returns = reference_episode_returns(
                    self.env, self.scenario, episodes=measured, seed=self.seed
                )
            _REFERENCES[key] = (measured, returns)
        return None if returns is None else references_of_first(returns, episodes)

    @classmethod
    def for_config(
        cls, config: MarlplugConfig, algorithm: Any, notes: list[str]
    ) -> PeriodicEvaluation | None:
        """The run's evaluation; ``None`` when ``train.eval_every`` is 0 or null, or when the
        algorithm cannot act (a plugin's program without an acting policy: it still trains, and
        ``notes`` says why there is no evaluation)."""
        if not config.train.eval_every:
            return None
        try:
            return cls(config, algorithm)
        except NoActingPolicy as missing:
            notes.append(str(missing))
            return None

    def due(self, update: int, total: int) -> bool:
        """Whether to evaluate after ``update`` updates of a run of ``total``."""
        return self.every > 0 and (update % self.every == 0 or update == total)

    def __call__(
        self, theta: torch.Tensor, *, update: int, frames: int, final: bool = False
    ) -> EvaluationPoint:
        """Evaluate ``theta`` (every agent's rows) after ``update`` updates and ``frames`` frames;
        ``final``: the evaluation after the run's last update (``train.final_eval_episodes``)."""
        episodes = self.final_episodes if final else self.episodes
        references = self.references(episodes)
        # One thread: a few env copies act through products of a few rows, which MKL computes with
        # other last bits on two threads (marlplug.train.threads), and a second thread would only
        # add synchronization to such small tensors.
        with untouched_rng(), one_thread():
            policy = acting_policy(self.program, self.env, theta.clone())
            if policy is None:  # a ModuleActing program whose policy is unset
                raise ConfigError(
                    "train.eval_every: the algorithm's program has no acting policy to evaluate; "
                    "set train.eval_every=0"
                )
            result = evaluate(
                self.env, policy, episodes=episodes, seed=self.seed, deterministic=True
            )
        return EvaluationPoint(
            update=update,
            frames=frames,
            mean=result.mean,
            std=result.std,
            episodes=result.episodes,
            score=None if references is None else references.score(result.mean),
            backend=self.backend,
        )

    def close(self) -> None:
        if not self.env.is_closed:
            self.env.close()
