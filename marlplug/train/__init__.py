"""Training: the one orchestrator that runs every learner algorithm, centralized or coded, and joint
PPO's in-process trainer for people who drive the updates themselves.

- :mod:`~marlplug.train.orchestrator`: :func:`run`, a whole run from a config (run folder,
  checkpoint/resume, metrics, ``rounds.csv``, plots) for any algorithm with ``bind`` and
  ``rollouts`` (:mod:`marlplug.algorithms.protocol`).
- :mod:`~marlplug.train.run_state`: :class:`~marlplug.train.run_state.RunState`, what a run
  remembers across iterations and resumes, and its ``checkpoint.pt`` (and kept checkpoints).
- :mod:`~marlplug.train.budget`: ``train.max_minutes``, the wall time spent across resumes.
- :mod:`~marlplug.train.evaluation`: periodic deterministic evaluation (``train.eval_every``).
- :mod:`~marlplug.train.threads`: how many torch threads a run uses (``train.torch_threads``).
- :mod:`~marlplug.train.components`: the env and learner algorithm a config names.
- :mod:`~marlplug.train.loop`: :class:`Training`, the iterations (minibatch -> round -> sync).
- :mod:`~marlplug.train.executors`: where a round runs (in process, or on coded learners).
- :mod:`~marlplug.train.result`: :class:`TrainResult`, what a run returns and where its files went.
- :mod:`~marlplug.train.run`: :func:`run_training` (what ``marlplug train`` calls) and
  :func:`build_trainer`; :mod:`~marlplug.train.trainer`: :class:`JointMultiAgentTrainer`, joint
  PPO's in-process trainer over the same update (``PPO.update_step``).
- :mod:`~marlplug.train.coded_run`: ``run_maddpg``/``run_coded``, the former names of :func:`run`.
"""

from __future__ import annotations

from marlplug.losses.ppo_options import JointTrainerConfig, TrainSection
from marlplug.runs.stats import JointStats
from marlplug.train.loop import Training
from marlplug.train.orchestrator import run
from marlplug.train.result import TrainResult
from marlplug.train.run import run_training
from marlplug.train.trainer import JointMultiAgentTrainer

__all__ = [
    "JointMultiAgentTrainer",
    "JointStats",
    "JointTrainerConfig",
    "TrainResult",
    "TrainSection",
    "Training",
    "run",
    "run_training",
]
