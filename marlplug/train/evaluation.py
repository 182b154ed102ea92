"""Periodic evaluation during training (``train.eval_every``, ``train.eval_episodes``): the current
``theta`` acts with deterministic actions on fixed evaluation episodes of a separate env.

Evaluation leaves training exactly as it would be without it: it steps its own env (built by
:func:`~marlplug.envs.evaluate.evaluation_env`, never the training env), acts through its own bound
program (:func:`~marlplug.algorithms.acting.acting_policy`, the way ``marlplug evaluate`` loads a
checkpoint; no algorithm is special-cased), and restores torch's, numpy's and Python's global RNGs
after every use, so a run with evaluation gives the same ``theta`` bit for bit as one without.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from marlplug.algorithms.acting import FlatActing, ModuleActing, acting_policy
from marlplug.config import MarlplugConfig
from marlplug.envs.evaluate import (
    DEFAULT_EVALUATION_SEED,
    evaluate,
    evaluation_env,
    reference_returns,
)
from marlplug.errors import ConfigError
from marlplug.runs.checkpoint import restore_rng_states, rng_states
from marlplug.runs.evaluations import EvaluationPoint


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

    The episodes are those of ``marlplug evaluate RUN_DIR --episodes train.eval_episodes`` (one env
    copy, evaluation seed :data:`~marlplug.envs.evaluate.DEFAULT_EVALUATION_SEED`), so the run's
    final evaluation and that command agree. Where the scenario has a scripted policy, the random
    and scripted references are measured once on the same episodes and every evaluation carries its
    oracle-normalized score.

    Args:
        config: the run's config (its ``train.eval_every`` must be positive).
        algorithm: the run's learner algorithm (bound once more, to the evaluation env).

    Raises:
        ConfigError: the algorithm's program cannot act (no acting policy to evaluate).

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
        self.seed = DEFAULT_EVALUATION_SEED
        with untouched_rng():  # building networks and envs may draw from the global RNGs
            self.env = evaluation_env(config)
            self.program = algorithm.bind(self.env, config)
            if not isinstance(self.program, (ModuleActing, FlatActing)):
                self.env.close()
                raise ConfigError(
                    f"train.eval_every: algorithm '{config.algorithm.name}' has no acting policy "
                    f"to evaluate; set train.eval_every=0"
                )
            self.references = reference_returns(
                self.env, config.env.name, episodes=self.episodes, seed=self.seed
            )

    @classmethod
    def for_config(cls, config: MarlplugConfig, algorithm: Any) -> PeriodicEvaluation | None:
        """The run's evaluation; ``None`` when ``train.eval_every`` is 0 or null."""
        return cls(config, algorithm) if config.train.eval_every else None

    def due(self, update: int, total: int) -> bool:
        """Whether to evaluate after ``update`` updates of a run of ``total``."""
        return self.every > 0 and (update % self.every == 0 or update == total)

    def __call__(self, theta: torch.Tensor, *, update: int, frames: int) -> EvaluationPoint:
        """Evaluate ``theta`` (every agent's rows) after ``update`` updates and ``frames`` frames."""
        with untouched_rng():
            policy = acting_policy(self.program, self.env, theta.clone())
            if policy is None:  # a ModuleActing program whose policy is unset
                raise ConfigError(
                    "train.eval_every: the algorithm's program has no acting policy to evaluate; "
                    "set train.eval_every=0"
                )
            result = evaluate(
                self.env, policy, episodes=self.episodes, seed=self.seed, deterministic=True
            )
        return EvaluationPoint(
            update=update,
            frames=frames,
            mean=result.mean,
            std=result.std,
            episodes=result.episodes,
            score=None if self.references is None else self.references.score(result.mean),
        )

    def close(self) -> None:
        if not self.env.is_closed:
            self.env.close()
