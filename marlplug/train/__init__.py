"""Training: the one orchestrator that runs every learner algorithm, centralized or coded, and the
joint PPO trainer it replaces for PPO once PPO implements the learner protocol.

- :mod:`~marlplug.train.orchestrator`: :func:`run`, a whole run from a config (run folder,
  checkpoint/resume, metrics, ``rounds.csv``, plots) for any algorithm with ``bind`` and
  ``rollouts`` (:mod:`marlplug.algorithms.protocol`).
- :mod:`~marlplug.train.loop`: :class:`Training`, the iterations (minibatch -> round -> sync).
- :mod:`~marlplug.train.executors`: where a round runs (in process, or on coded learners).
- :mod:`~marlplug.train.legacy`: the bridge for algorithms on the pre-protocol contract (MADDPG).
- :mod:`~marlplug.train.run` and :mod:`~marlplug.train.trainer`: the joint PPO trainer
  (:class:`JointMultiAgentTrainer`) and its run (:func:`run_training`), coded PPO included.
- :mod:`~marlplug.train.surfaces`: the minimal ``JointEnv``/``JointPolicy`` surfaces.
- :mod:`~marlplug.train.coded_run`: ``run_maddpg``/``run_coded``, the former names of :func:`run`.
"""

from __future__ import annotations

from marlplug.config.train import JointTrainerConfig, TrainSection
from marlplug.runs.stats import JointStats
from marlplug.train.loop import Training
from marlplug.train.orchestrator import TrainResult, run
from marlplug.train.run import run_training
from marlplug.train.surfaces import JointEnv, JointPolicy, JointStepResult, TorchRLJointEnv
from marlplug.train.trainer import JointMultiAgentTrainer

__all__ = [
    "JointEnv",
    "JointMultiAgentTrainer",
    "JointPolicy",
    "JointStats",
    "JointStepResult",
    "JointTrainerConfig",
    "TorchRLJointEnv",
    "TrainResult",
    "TrainSection",
    "Training",
    "run",
    "run_training",
]
