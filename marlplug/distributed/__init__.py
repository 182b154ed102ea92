"""Coded distributed training: a controller, N learners (local processes or Ray), stragglers, faults."""

from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController, RoundLog, RoundTimeoutError
from marlplug.distributed.learner import learner_compute
from marlplug.distributed.run import CodedRunResult, run_coded, run_maddpg
from marlplug.distributed.stragglers import StragglerModel
from marlplug.distributed.training import CentralizedUpdater, MaddpgRunner

__all__ = [
    "CentralizedUpdater",
    "CodedController",
    "CodedRunResult",
    "LocalBackend",
    "MaddpgRunner",
    "RoundLog",
    "RoundTimeoutError",
    "StragglerModel",
    "learner_compute",
    "run_coded",
    "run_maddpg",
]
