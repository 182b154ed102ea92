"""The value-based family: Q-networks per agent with replay, target networks and epsilon-greedy
exploration (:mod:`~marlplug.algorithms.q.options`, :mod:`~marlplug.algorithms.q.program`,
:mod:`~marlplug.algorithms.q.exploration`); ``iql`` (:mod:`~marlplug.algorithms.q.iql`) and
``vdn`` (:mod:`~marlplug.algorithms.q.vdn`)."""

from marlplug.algorithms.q.iql import IQL
from marlplug.algorithms.q.options import QOptions
from marlplug.algorithms.q.program import QProgram
from marlplug.algorithms.q.vdn import VDN

__all__ = ["IQL", "VDN", "QOptions", "QProgram"]
