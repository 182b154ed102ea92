"""Coded distributed learning's runtime: a controller, N learners (local processes or Ray), stragglers.

No training loop lives here: :mod:`marlplug.train` drives the rounds.
"""

from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController, RoundLog, RoundTimeoutError
from marlplug.distributed.learner import learner_compute
from marlplug.distributed.stragglers import StragglerModel

__all__ = [
    "CodedController",
    "LocalBackend",
    "RoundLog",
    "RoundTimeoutError",
    "StragglerModel",
    "learner_compute",
]
