"""Coded distributed learning's runtime: the controller, the learners and where they run.

- :mod:`~marlplug.distributed.controller`: :class:`CodedController` runs one coded round — broadcast
  the agents' state rows and a minibatch, collect coded answers, decode — on a wall or simulated
  clock, and returns what a centralized ``LearnerProgram.update`` call for every agent returns.
- :mod:`~marlplug.distributed.learner`: :func:`learner_compute`, what one learner computes (its
  agents' update through the :mod:`marlplug.algorithms.protocol` contract, coded exactly).
- :mod:`~marlplug.distributed.wall_round`: a round in real time (re-dispatch, timeouts, faults).
- :mod:`~marlplug.distributed.rounds`: :class:`RoundLog`, a round's record, and per-agent stats.
- :mod:`~marlplug.distributed.assignment`: a run's scheme and assignment matrix from its config.
- :mod:`~marlplug.distributed.backends`: ``local`` worker processes and ``ray`` actors.

Stragglers are modelled in :mod:`marlplug.coding.stragglers` (one model for runtime and analysis).
No training loop lives here: :mod:`marlplug.train` drives the rounds.
"""

from marlplug.coding.stragglers import StragglerModel
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController, RoundLog, RoundTimeoutError
from marlplug.distributed.learner import learner_compute

__all__ = [
    "CodedController",
    "LocalBackend",
    "RoundLog",
    "RoundTimeoutError",
    "StragglerModel",
    "learner_compute",
]
